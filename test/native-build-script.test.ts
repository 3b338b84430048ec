/**
 * scripts/build-native.mjs as users meet it: a library older than its sources never survives
 * a build that could not redo it (it would load, as the loader checks only the ABI version),
 * and the script does its work when run through a symlinked path, as the README tells users to
 * run it from node_modules (a folder install, pnpm, npm link).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, symlinkSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildCuda, buildFixture } from '../scripts/build-native.mjs';
import { defaultLibraryPath, loadNativeLibrary, NativeContext, seededFloats } from '../src/native/index.js';
import { packageRoot } from '../src/paths.js';
import { maxViolation } from './fixtures/native-tolerance.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-build-script-');
const longAgo = new Date('2001-01-01T00:00:00Z');

beforeAll(() => {
  buildFixture();
});

/** A loadable library at `dir/name`, older than every source (as after an edit of one). */
function staleLibrary(dir: string, name: string): string {
  const out = join(dir, name);
  copyFileSync(defaultLibraryPath('fixture'), out);
  utimesSync(out, longAgo, longAgo);
  return out;
}

describe('a library older than its sources', () => {
  it('is removed when cc fails to rebuild it', () => {
    const out = staleLibrary(tempDir(), 'libomni_fixture.so');
    const saved = process.env.CC;
    process.env.CC = '/bin/false';
    try {
      expect(() => buildFixture({ outDir: join(out, '..') })).toThrow();
    } finally {
      if (saved === undefined) delete process.env.CC;
      else process.env.CC = saved;
    }
    expect(existsSync(out)).toBe(false);
  });

  it('is removed when nvcc fails to rebuild it', () => {
    const out = staleLibrary(tempDir(), 'libomni_cuda.so');
    expect(() => buildCuda({ outDir: join(out, '..'), nvcc: '/bin/false' })).toThrow();
    expect(existsSync(out)).toBe(false);
  });

  it('is kept but reported stale when there is no nvcc (it may have been built elsewhere)', () => {
    const stale = staleLibrary(tempDir(), 'libomni_cuda.so');
    expect(buildCuda({ outDir: join(stale, '..'), nvcc: null })).toMatchObject({ built: false, stale: true });
    expect(existsSync(stale)).toBe(true);

    const fresh = join(tempDir(), 'libomni_cuda.so');
    copyFileSync(defaultLibraryPath('fixture'), fresh); // written now: newer than every source
    expect(buildCuda({ outDir: join(fresh, '..'), nvcc: null })).toMatchObject({
      built: false,
      stale: false,
    });
  });

  it('an up-to-date library stays when a forced rebuild fails', () => {
    const dir = tempDir();
    const fresh = join(dir, 'libomni_fixture.so');
    copyFileSync(defaultLibraryPath('fixture'), fresh);
    const saved = process.env.CC;
    process.env.CC = '/bin/false';
    try {
      expect(() => buildFixture({ outDir: dir, force: true })).toThrow();
    } finally {
      if (saved === undefined) delete process.env.CC;
      else process.env.CC = saved;
    }
    expect(existsSync(fresh)).toBe(true);
    const cuda = join(dir, 'libomni_cuda.so');
    copyFileSync(defaultLibraryPath('fixture'), cuda); // a stand-in, newer than every source
    expect(() => buildCuda({ outDir: dir, nvcc: '/bin/false', force: true })).toThrow();
    expect(existsSync(cuda)).toBe(true);
  });
});

// GCC 11 is the compiler of Ubuntu 22.04, the base of most CUDA images, so of the GPU machine
// gpu-check.sh builds on; GCC 10 and 9 still ship with older ones. Runs where one is installed.
const olderGcc = ['gcc-11', 'gcc-10', 'gcc-9'].find((cc) => spawnSync(cc, ['--version']).status === 0);

describe.runIf(olderGcc)('built by a GCC older than 12', () => {
  it('builds the fixture, and it computes within the stated tolerance', () => {
    const dir = tempDir();
    const saved = process.env.CC;
    process.env.CC = olderGcc;
    try {
      buildFixture({ outDir: dir, force: true });
    } finally {
      if (saved === undefined) delete process.env.CC;
      else process.env.CC = saved;
    }
    const [rows, inF, outF] = [5, 17, 33];
    const x = seededFloats(1, rows * inF, 2);
    const w = seededFloats(2, outF * inF, 1 / Math.sqrt(inF));
    const b = seededFloats(3, outF, 0.5);
    const ctx = NativeContext.open(loadNativeLibrary('fixture', { path: join(dir, 'libomni_fixture.so') }));
    try {
      ctx.uploadWeights(w, b, outF, inF);
      expect(maxViolation(ctx.linearGelu(x, rows), x, w, b, rows, outF, inF)).toBeLessThanOrEqual(1);
    } finally {
      ctx.close();
    }
  });
});

describe('run through a symlinked path', () => {
  it('runs (here: reports the failing cc, exit 1) instead of exiting 0 having done nothing', () => {
    // A copy of the package's build inputs, linked as node_modules/omni-runtime is by a folder
    // install; cc fails at once, so nothing is compiled and the repository's build is untouched.
    const scratch = tempDir();
    const pkg = join(scratch, 'pkg');
    mkdirSync(join(pkg, 'scripts'), { recursive: true });
    cpSync(join(packageRoot, 'native'), join(pkg, 'native'), {
      recursive: true,
      filter: (src) => !src.endsWith(join('native', 'build')),
    });
    copyFileSync(join(packageRoot, 'scripts', 'build-native.mjs'), join(pkg, 'scripts', 'build-native.mjs'));
    mkdirSync(join(scratch, 'app', 'node_modules'), { recursive: true });
    symlinkSync(pkg, join(scratch, 'app', 'node_modules', 'omni-runtime'));
    const run = spawnSync(process.execPath, ['node_modules/omni-runtime/scripts/build-native.mjs'], {
      cwd: join(scratch, 'app'),
      env: { ...process.env, CC: '/bin/false' },
      encoding: 'utf8',
    });
    expect(run.stderr).toContain('native: fixture build FAILED (cc)');
    expect(run.status).toBe(1);
  });
});
