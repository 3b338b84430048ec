/**
 * Whether `bench` may replace what its --out folder holds under its own file names. It writes
 * only results.json and the three charts there (and removes its charts when a run skips them),
 * so a folder where none of them exists is safe whatever else it holds (`.`, a home folder).
 * Where one exists, it is replaced only as an earlier run's output: results.json an earlier
 * run's (its first key says so), a chart an SVG that vega drew (beside such a results.json, any
 * file: that run wrote them together; the README's charts in docs/bench have none). Otherwise
 * the folder is refused as a usage mistake (exit 2) before any load, rather than an operator's
 * own results.json or latency.svg replaced or removed.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from './args.js';

/** How every results.json bench has written begins (JSON.stringify, its `tool` first). */
const EARLIER_RESULTS = /^\{\s*"tool"\s*:\s*"omni-runtime bench"/;
/** How an SVG vega renders begins: its root element has the class "marks". */
const VEGA_SVG = /^<svg\b[^>]*\sclass="marks"/;

/** Throws a UsageError when `dir` holds one of `names` that no earlier run wrote. */
export function checkEarlierRun(
  dir: string,
  path: string,
  resultsName: string,
  names: readonly string[],
): void {
  const results = begins(join(dir, resultsName), EARLIER_RESULTS);
  const foreign = names.filter((name) => {
    const file = join(dir, name);
    if (!exists(file)) return false;
    return name === resultsName ? !results : !(results || begins(file, VEGA_SVG));
  });
  if (foreign.length === 0) return;
  throw new UsageError(
    `--out ${JSON.stringify(path)}: ${foreign.join(', ')} there ${foreign.length === 1 ? 'is' : 'are'} not an earlier bench run's output (bench replaces only its own): choose another folder, or move ${foreign.length === 1 ? 'it' : 'them'}`,
  );
}

/** As prepareOutDir saw it: a name not there, or a link to nothing, is written through. */
function exists(file: string): boolean {
  try {
    statSync(file);
    return true;
  } catch {
    return false;
  }
}

/** Whether `file` can be read and its first 512 bytes match `pattern`. */
function begins(file: string, pattern: RegExp): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return false; // not there, or unreadable: not known to be a run's
  }
  try {
    const head = Buffer.alloc(512);
    const length = readSync(fd, head, 0, head.length, 0);
    return pattern.test(head.subarray(0, length).toString('utf8'));
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}
