#!/usr/bin/env node
/**
 * The `omni-runtime` command (package bin; built to dist/src/cli.js). See src/cli/main.ts.
 */
import { endsWhenReaderLeaves, errorLine, exitCodeFor, main } from './cli/main.js';

// A reader that left (`| head`, a pager quit early) is not a failure of ours: stop writing and
// exit quietly, as other commands do, instead of dying on an unhandled 'error' with a stack.
// `serve` writes on into nothing and keeps serving: a SIGTERM still drains it.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  if (endsWhenReaderLeaves()) process.exit(process.exitCode ?? 0);
});
// Nor is one that left stderr (`2>&1 | head`): unhandled, its EPIPE ended the process with 1,
// whatever the status owed (2 for a usage mistake, the drain's for serve).
process.stderr.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
});

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`${errorLine(err)}\n`);
  process.exitCode = exitCodeFor(err);
}
