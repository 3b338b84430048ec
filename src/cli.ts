#!/usr/bin/env node
/**
 * The `omni-runtime` command (package bin; built to dist/src/cli.js). See src/cli/main.ts.
 */
import { errorLine, exitCodeFor, main } from './cli/main.js';

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`${errorLine(err)}\n`);
  process.exitCode = exitCodeFor(err);
}
