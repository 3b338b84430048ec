import { ContextLedger } from '../native/context-ledger.js';
import { type NativeLibrary, NativeStatus } from '../native/index.js';
import type { ThreadEnds } from '../runtime/thread-ends.js';

/**
 * @internal Gives back, on the main thread, the native contexts of LinearRuntime threads that
 * ended without their close hook: a thread terminated by a forced close, or one that died
 * mid-life. Its ledger goes to the threads in workerData (NativeWorkerData.contexts); it is the
 * runtime's ThreadEnds, so each thread's entries are closed once that thread has exited, and all
 * that are left once every thread has (see ContextLedger for who closes what).
 *
 * `library` is the one the threads load (the same file: koffi loads it once per process, and a
 * context may be closed from any thread, as omni_close sets the context's device itself); the
 * main thread has it loaded already, from choosing the backend.
 *
 * Throws: never (it runs in a worker's 'exit' event); a close the library refuses is counted in
 * `refused` and warned of (OmniRuntimeWarning): with exactly-once entries it should not happen.
 */
export class ContextReclaim implements ThreadEnds {
  readonly ledger: ContextLedger;
  readonly #library: NativeLibrary;
  #closed = 0;
  #refused = 0;

  constructor(ledger: ContextLedger, library: NativeLibrary) {
    this.ledger = ledger;
    this.#library = library;
  }

  /** Room for every thread of `threads`, and as many replacements starting while the lost ones exit. */
  static forThreads(threads: number, library: NativeLibrary): ContextReclaim {
    return new ContextReclaim(ContextLedger.create(2 * threads), library);
  }

  /** Contexts closed here, for threads that ended without their close hook. */
  get closed(): number {
    return this.#closed;
  }

  /** Closes the library refused (a context closed twice would be one). */
  get refused(): number {
    return this.#refused;
  }

  exited(threadId: number): void {
    this.#close(this.ledger.takeThread(threadId));
  }

  stopped(): void {
    this.#close(this.ledger.takeAll());
  }

  #close(addresses: readonly bigint[]): void {
    for (const address of addresses) {
      let failure: string | undefined;
      try {
        const status = this.#library.raw.omni_close(address);
        if (status !== NativeStatus.OK) failure = `status ${status}`;
      } catch (err) {
        failure = (err as Error)?.message ?? String(err);
      }
      if (failure === undefined) {
        this.#closed++;
        continue;
      }
      this.#refused++;
      process.emitWarning(
        `omni_close of a lost worker thread's native context failed: ${failure}`,
        'OmniRuntimeWarning',
      );
    }
  }
}
