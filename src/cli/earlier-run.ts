/**
 * Whether `bench` may replace what its --out folder holds under its own file names. It writes
 * only results.json and the three charts there (and removes its charts when a run skips them),
 * so a folder where none of them exists is safe whatever else it holds (`.`, a home folder).
 * Where one exists, it is replaced only as an earlier run's output: results.json there must be
 * an earlier run's (its first key says so). Otherwise the folder is refused as a usage mistake
 * (exit 2) before any load, rather than an operator's own results.json or latency.svg replaced
 * or removed.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from './args.js';

/** How every results.json bench has written begins (JSON.stringify, its `tool` first). */
const EARLIER_RESULTS = /^\{\s*"tool"\s*:\s*"omni-runtime bench"/;

/** Throws a UsageError when `dir` holds one of `names` that no earlier run wrote. */
export function checkEarlierRun(
  dir: string,
  path: string,
  resultsName: string,
  names: readonly string[],
): void {
  const present = names.filter((name) => exists(join(dir, name)));
  if (present.length === 0 || isEarlierResults(join(dir, resultsName))) return;
  throw new UsageError(
    `--out ${JSON.stringify(path)}: ${present.join(', ')} there ${present.length === 1 ? 'is' : 'are'} not an earlier bench run's output (bench replaces only its own): choose another folder, or move ${present.length === 1 ? 'it' : 'them'}`,
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

function isEarlierResults(file: string): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return false; // not there (then what is there is a chart no run wrote beside it), unreadable
  }
  try {
    const head = Buffer.alloc(128);
    const length = readSync(fd, head, 0, head.length, 0);
    return EARLIER_RESULTS.test(head.subarray(0, length).toString('utf8'));
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}
