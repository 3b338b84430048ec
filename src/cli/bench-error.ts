/**
 * A benchmark that could not measure what it was asked to (not a mistake in its flags): the
 * command line prints it as one line and exits 1, and tests match its code.
 */
export class BenchError extends Error {
  readonly code = 'OMNI_ERR_BENCH';
  constructor(message: string) {
    super(message);
    this.name = 'BenchError';
  }
}
