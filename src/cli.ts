#!/usr/bin/env node
/**
 * The `omni-runtime` command (package bin; built to dist/src/cli.js). See src/cli/main.ts.
 */
import { endsWhenReaderLeaves, errorLine, exitCodeFor, main, outputLost } from './cli/main.js';

// A reader that left (`| head`, a pager quit early) is not a failure of ours: stop writing and
// exit quietly, as other commands do, instead of dying on an unhandled 'error' with a stack.
// Output that could not be written (`> file` on a full disk) is: one line, exit 1, no stack.
// `serve` writes on into nothing and keeps serving either way: a SIGTERM still drains it.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (!endsWhenReaderLeaves()) return;
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  process.stderr.write(`${errorLine(outputLost(err))}\n`);
  process.exit(1);
});
// Nor is one that left stderr (`2>&1 | head`), or a stderr that cannot be written (a full
// disk): unhandled, its error ended the process with 1, with a stack, whatever the status owed
// (2 for a usage mistake, the drain's for serve; serve died at once, its work cut off).
process.stderr.on('error', () => {});

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`${errorLine(err)}\n`);
  process.exitCode = exitCodeFor(err);
}
