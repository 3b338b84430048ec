/**
 * The --out folder: created and checked for writing before any load runs, so a bad path is a
 * one-line usage error at once rather than a failure after the benchmark; removed again if the
 * run ends before writing anything into it.
 */
import {
  accessSync,
  chmodSync,
  constants,
  mkdirSync,
  mkdtempSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmdirSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from './args.js';

export interface OutDir {
  readonly dir: string;
  /** The first folder prepareOutDir made (its parents existed), or undefined: it existed. */
  readonly created: string | undefined;
}

/** Creates `dir` and checks it, and each of `names` already in it, can be written. */
export function prepareOutDir(path: string, names: readonly string[] = []): OutDir {
  // Resolved first: in 'new/../old' the folder made would be 'new', not the one written to.
  const dir = resolve(path);
  let created: string | undefined;
  try {
    created = makeFolders(dir);
    probeWritable(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new UsageError(`--out ${JSON.stringify(path)} cannot be used as an output folder (${code})`);
  }
  for (const name of names) {
    const file = join(dir, name);
    let problem: string | undefined;
    try {
      if (!statSync(file).isFile()) problem = 'not a regular file';
      else accessSync(file, constants.W_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') problem = code ?? 'error';
    }
    if (problem !== undefined) {
      throw new UsageError(`--out ${JSON.stringify(path)}: ${name} there cannot be written (${problem})`);
    }
  }
  return { dir, created };
}

/**
 * Makes something in `dir` and removes it: the run writes there by making files beside their
 * names. access(W_OK) read only the mode bits, which root passes where nothing can be made (sysfs,
 * a root-squashed NFS export): the whole load ran, then failed to write (EACCES). A folder, with
 * a name mkdtemp picks, so it can never be another run's.
 */
function probeWritable(dir: string): void {
  const probe = mkdtempSync(join(dir, '.omni-runtime-probe-'));
  try {
    rmdirSync(probe);
  } catch {
    // Made, so the folder takes writes; an empty folder left behind is all this can cost.
  }
}

/**
 * mkdirSync(dir, { recursive: true }) one folder at a time: Node's own (20, 22.23, 24.22; not
 * 26.12) loops for ever, deaf to SIGTERM, where a parent that exists answers ENOENT for a child,
 * as /proc does. Returns the first folder made, or undefined: `dir` existed.
 */
function makeFolders(dir: string): string | undefined {
  const missing: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    try {
      if (!statSync(d).isDirectory())
        throw Object.assign(new Error(`${d} exists and is not a folder`), { code: 'EEXIST' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(d) === d) throw err;
      missing.push(d);
    }
  }
  let created: string | undefined;
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d);
      created ??= d;
    } catch (err) {
      // Made meanwhile by another run: taken as it is, as the recursive mkdir took it.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(d).isDirectory()) throw err;
    }
  }
  return created;
}

/**
 * Removes the folders prepareOutDir made, deepest first, while they are empty: a run that
 * failed before writing anything leaves no folder of its own behind.
 */
export function discardOutDir({ dir, created }: OutDir): void {
  if (created === undefined) return;
  const top = resolve(created);
  for (let d = resolve(dir); ; d = dirname(d)) {
    try {
      rmdirSync(d);
    } catch {
      return; // not empty (or not ours to remove): keep it and everything above it
    }
    if (d === top || dirname(d) === d) return;
  }
}

/** Writes `files` (name -> contents) under `dir`; returns their paths. */
export function writeOutputs(dir: string, files: ReadonlyArray<readonly [string, string]>): string[] {
  // Made again if it went: another run that made the same folder and then failed removes it
  // while it is still empty (discardOutDir), and this run's results must not be lost to that.
  makeFolders(dir);
  return files.map(([name, text]) => {
    const path = join(dir, name);
    writeWhole(path, text);
    return path;
  });
}

/**
 * Writes `text` to `path` whole or not at all: into a file beside it, then renamed over it. A
 * write that fails part-way (a full disk) truncated an earlier run's results.json and left half
 * of this one's. A link is written through, as writeFileSync did: its target is replaced.
 */
function writeWhole(path: string, text: string): void {
  let target = path;
  let mode: number | undefined;
  try {
    target = realpathSync(path);
    // The file it replaces keeps its permissions, as when it was written into.
    mode = statSync(target).mode & 0o7777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    // Nothing there yet; a link that points at nothing is still written through, as
    // writeFileSync made its target: renamed over, the link itself was replaced by the file.
    target = linkEnd(path);
  }
  const partial = join(dirname(target), `.${basename(target)}.${process.pid}.partial`);
  try {
    writeFileSync(partial, text);
    if (mode !== undefined) chmodSync(partial, mode);
    renameSync(partial, target);
  } catch (err) {
    try {
      unlinkSync(partial);
    } catch {
      // Never made, or already renamed: nothing to clean up; the write's own error is the one.
    }
    throw err;
  }
}

/** Where a chain of links from `path` ends: the path of the file they lead to. */
function linkEnd(path: string): string {
  let end = path;
  // Bounded as the system bounds a chain (40 links): a loop made since realpathSync's check.
  for (let hops = 0; hops < 40; hops++) {
    let link: string;
    try {
      link = readlinkSync(end);
    } catch {
      return end; // not a link (EINVAL) or not there (ENOENT): the file to make
    }
    end = resolve(dirname(end), link);
  }
  return end;
}

/** Removes `names` under `dir` where they exist (prepareOutDir checked they are plain files). */
export function removeOutputs(dir: string, names: readonly string[]): void {
  for (const name of names) {
    try {
      unlinkSync(join(dir, name));
    } catch (err) {
      // Anything but "not there" is the real reason, told as it is (rmSync's force turned a
      // refused unlink into a misleading ENOTDIR).
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}
