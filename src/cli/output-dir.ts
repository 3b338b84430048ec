/**
 * The --out folder: created and checked for writing before any load runs, so a bad path is a
 * one-line usage error at once rather than a failure after the benchmark.
 */
import { accessSync, constants, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from './args.js';

/** Creates `dir` and checks it, and each of `names` already in it, can be written. */
export function prepareOutDir(dir: string, names: readonly string[] = []): string {
  try {
    mkdirSync(dir, { recursive: true });
    accessSync(dir, constants.W_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new UsageError(`--out ${JSON.stringify(dir)} cannot be used as an output folder (${code})`);
  }
  for (const name of names) {
    const path = join(dir, name);
    let problem: string | undefined;
    try {
      if (!statSync(path).isFile()) problem = 'not a regular file';
      else accessSync(path, constants.W_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') problem = code ?? 'error';
    }
    if (problem !== undefined) {
      throw new UsageError(`--out ${JSON.stringify(dir)}: ${name} there cannot be written (${problem})`);
    }
  }
  return dir;
}

/** Writes `files` (name -> contents) under `dir`; returns their paths. */
export function writeOutputs(dir: string, files: ReadonlyArray<readonly [string, string]>): string[] {
  return files.map(([name, text]) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  });
}

/** Removes `names` under `dir` where they exist (prepareOutDir checked they are plain files). */
export function removeOutputs(dir: string, names: readonly string[]): void {
  for (const name of names) rmSync(join(dir, name), { force: true });
}
