/**
 * Compiles bench/native/atomic-pair.c with cc and loads it with koffi, so that the admission
 * bench can print, in the same process and table, what one compare-exchange + fetch-sub pair
 * costs on this CPU with no JavaScript at all: the ceiling of any ratio an admit/release pair can
 * show against a baseline. Built into a temporary folder on each run (a bench-only library, kept
 * out of the package's native/build).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { koffi } from '../../src/native/koffi.js';
import { packageRoot } from '../../src/paths.js';

/** Runs `n` pairs in C; returns how many were admitted (all of them, as nothing else holds the word). */
export type AtomicPairs = (n: number, bound: number) => number;

/** The C pair loop, or why it could not be built (no cc, or koffi without its native module). */
export function loadNativeAtomicPairs(): { pairs: AtomicPairs } | { unavailable: string } {
  const dir = mkdtempSync(join(tmpdir(), 'omni-atomic-floor-'));
  try {
    const lib = join(dir, 'libatomic-pair.so');
    const source = join(packageRoot, 'bench', 'native', 'atomic-pair.c');
    const cc = process.env.CC || 'cc'; // as scripts/build-native.mjs reads it: set but empty is the default
    const built = spawnSync(cc, ['-O2', '-shared', '-fPIC', '-o', lib, source], { encoding: 'utf8' });
    if (built.error !== undefined) return { unavailable: `${cc}: ${built.error.message}` };
    if (built.status !== 0) return { unavailable: `${cc} exited ${built.status}: ${built.stderr.trim()}` };
    const handle = koffi().load(lib);
    const fn = handle.func('int32_t omni_bench_atomic_pairs(int32_t n, int32_t bound)') as AtomicPairs;
    return { pairs: fn };
  } catch (err) {
    return { unavailable: (err as Error).message };
  } finally {
    // The library stays mapped after its file is removed; nothing is left in the temporary folder.
    rmSync(dir, { recursive: true, force: true });
  }
}
