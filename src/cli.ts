#!/usr/bin/env node
/**
 * The `omni-runtime` command (package bin; built to dist/src/cli.js). See src/cli/main.ts.
 */
import { errorLine, exitCodeFor, main } from './cli/main.js';

// A reader that left (`| head`, a pager quit early) is not a failure of ours: stop writing and
// exit quietly, as other commands do, instead of dying on an unhandled 'error' with a stack.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(process.exitCode ?? 0);
});

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`${errorLine(err)}\n`);
  process.exitCode = exitCodeFor(err);
}
