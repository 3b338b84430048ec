/**
 * scripts/build-native.mjs as users meet it: a library older than its sources never survives
 * a build that could not redo it (it would load, as the loader checks only the ABI version),
 * and the script does its work when run through a symlinked path, as the README tells users to
 * run it from node_modules (a folder install, pnpm, npm link).
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildCuda, buildFixture, findNvcc } from '../scripts/build-native.mjs';
import { defaultLibraryPath, loadNativeLibrary, NativeContext, seededFloats } from '../src/native/index.js';
import { packageRoot } from '../src/paths.js';
import { maxViolation } from './fixtures/native-tolerance.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-build-script-');
const longAgo = new Date('2001-01-01T00:00:00Z');
const builtAt = new Date('2010-01-01T00:00:00Z');
const editedAt = new Date('2020-01-01T00:00:00Z');

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

/** A copy of the package's build inputs (native sources and the script), without a build. */
function packageCopy(): string {
  const pkg = tempDir();
  mkdirSync(join(pkg, 'scripts'), { recursive: true });
  cpSync(join(packageRoot, 'native'), join(pkg, 'native'), {
    recursive: true,
    filter: (src) => !src.endsWith(join('native', 'build')),
  });
  copyFileSync(join(packageRoot, 'scripts', 'build-native.mjs'), join(pkg, 'scripts', 'build-native.mjs'));
  return pkg;
}

/** What execFileSync throws for a compiler that exits 1 (not, say, a TypeError before it ran). */
const COMPILER_FAILED = expect.objectContaining({ status: 1 });

describe('a library older than its sources', () => {
  it('is removed when cc fails to rebuild it', () => {
    const out = staleLibrary(tempDir(), 'libomni_fixture.so');
    const saved = process.env.CC;
    process.env.CC = '/bin/false';
    try {
      expect(() => buildFixture({ outDir: join(out, '..') })).toThrow(COMPILER_FAILED);
    } finally {
      if (saved === undefined) delete process.env.CC;
      else process.env.CC = saved;
    }
    expect(existsSync(out)).toBe(false);
  });

  it('is removed when nvcc fails to rebuild it', () => {
    const out = staleLibrary(tempDir(), 'libomni_cuda.so');
    expect(() => buildCuda({ outDir: join(out, '..'), nvcc: '/bin/false' })).toThrow(COMPILER_FAILED);
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

  it('without nvcc and without a library, nothing is reported stale (there is nothing to be old)', () => {
    expect(buildCuda({ outDir: tempDir(), nvcc: null })).toMatchObject({ built: false, stale: false });
  });

  it('a compiler that fails after writing part of its output leaves no temporary file behind', () => {
    const dir = tempDir();
    const cc = join(tempDir(), 'cc-fails-late');
    writeFileSync(
      cc,
      '#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && echo partial > "$2"; shift; done\nexit 1\n',
    );
    chmodSync(cc, 0o755);
    const saved = process.env.CC;
    process.env.CC = cc;
    try {
      expect(() => buildFixture({ outDir: dir })).toThrow(COMPILER_FAILED);
    } finally {
      if (saved === undefined) delete process.env.CC;
      else process.env.CC = saved;
    }
    expect(readdirSync(dir)).toEqual([]);
  });

  it('is rebuilt when one input is newer than it, though the others are older', () => {
    // A copy of the package's build inputs, all older than its library but one shared header.
    const pkg = packageCopy();
    for (const file of readdirSync(pkg, { recursive: true, encoding: 'utf8' })) {
      utimesSync(join(pkg, file), longAgo, longAgo);
    }
    mkdirSync(join(pkg, 'native', 'build'));
    const library = join(pkg, 'native', 'build', 'libomni_fixture.so');
    copyFileSync(defaultLibraryPath('fixture'), library);
    utimesSync(library, builtAt, builtAt);
    const header = join(pkg, 'native', 'common', readdirSync(join(pkg, 'native', 'common'))[0]!);
    utimesSync(header, editedAt, editedAt);
    const run = spawnSync(process.execPath, [join(pkg, 'scripts', 'build-native.mjs')], {
      cwd: pkg,
      env: { PATH: tempDir(), CC: '/bin/false' },
      encoding: 'utf8',
    });
    expect(run.stderr).toContain('native: fixture build FAILED (cc)');
    expect(run.status).toBe(1);
    expect(existsSync(library)).toBe(false);
  });

  it('a variant (defines) is built even where an up-to-date library stands in its folder', () => {
    const dir = tempDir();
    const fresh = join(dir, 'libomni_fixture.so');
    copyFileSync(defaultLibraryPath('fixture'), fresh);
    expect(buildFixture({ outDir: dir, defines: ['OMNI_ABI_VERSION=999'] })).toMatchObject({ built: true });
    expect(readFileSync(fresh).equals(readFileSync(defaultLibraryPath('fixture')))).toBe(false);
  });

  it('an up-to-date library stays when a forced rebuild fails', () => {
    const dir = tempDir();
    const fresh = join(dir, 'libomni_fixture.so');
    copyFileSync(defaultLibraryPath('fixture'), fresh);
    const saved = process.env.CC;
    process.env.CC = '/bin/false';
    try {
      expect(() => buildFixture({ outDir: dir, force: true })).toThrow(COMPILER_FAILED);
    } finally {
      if (saved === undefined) delete process.env.CC;
      else process.env.CC = saved;
    }
    expect(existsSync(fresh)).toBe(true);
    const cuda = join(dir, 'libomni_cuda.so');
    copyFileSync(defaultLibraryPath('fixture'), cuda); // a stand-in, newer than every source
    expect(() => buildCuda({ outDir: dir, nvcc: '/bin/false', force: true })).toThrow(COMPILER_FAILED);
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

const hasNm = spawnSync('nm', ['--version']).status === 0;

describe.runIf(hasNm)('the fixture it builds', () => {
  it('exports the ABI and fixture hooks (omni_*) only, not its internal functions', () => {
    const nm = spawnSync('nm', ['-D', '--defined-only', defaultLibraryPath('fixture')], { encoding: 'utf8' });
    expect(nm.status).toBe(0);
    const names = nm.stdout
      .split('\n')
      .map((line) => line.trim().split(/\s+/)[2])
      .filter((name): name is string => name !== undefined);
    expect(names).toContain('omni_abi_version');
    // GCC exports the ifunc resolver of a target_clones function whatever that function's
    // visibility; the clones themselves stay hidden.
    expect(names.filter((name) => !name.startsWith('omni_') && !name.endsWith('.resolver'))).toEqual([]);
  });
});

describe('what a library was built from', () => {
  /** Runs the package copy's build script (the fixture only: no nvcc on this PATH). */
  function build(pkg: string, cc = 'cc'): { status: number | null; stderr: string } {
    const ran = spawnSync(process.execPath, [join(pkg, 'scripts', 'build-native.mjs')], {
      cwd: pkg,
      env: { PATH: '/usr/bin:/bin', CC: cc },
      encoding: 'utf8',
    });
    return { status: ran.status, stderr: ran.stderr };
  }
  const built = /native: fixture built/;
  const upToDate = /native: fixture up to date/;

  /** A compiler that runs cc, first doing `before` (a line of shell). */
  function wrappedCc(before: string): string {
    const cc = join(tempDir(), 'cc-wrapper');
    writeFileSync(cc, `#!/bin/sh\n${before}\nexec cc "$@"\n`);
    chmodSync(cc, 0o755);
    return cc;
  }

  // Times alone did not tell: each of these left the library "up to date".
  it('is rebuilt for another compiler, and for a source added, with no input newer than it', () => {
    const pkg = packageCopy();
    expect(build(pkg)).toMatchObject({ status: 0, stderr: expect.stringMatching(built) });
    expect(build(pkg).stderr).toMatch(upToDate);
    const other = wrappedCc('true');
    expect(build(pkg, other).stderr).toMatch(built);
    expect(build(pkg, other).stderr).toMatch(upToDate);
    const added = join(pkg, 'native', 'fixture', 'added.c');
    writeFileSync(added, 'int omni_added_for_test(void) { return 1; }\n');
    utimesSync(added, longAgo, longAgo);
    expect(build(pkg, other).stderr).toMatch(built);
  });

  it('is rebuilt after a source changed while it was compiled (the library is dated at the start)', () => {
    const pkg = packageCopy();
    const source = join(pkg, 'native', 'fixture', 'kernel.c');
    // The edit lands after the compile began and before the library is written.
    expect(build(pkg, wrappedCc(`touch '${source}'`)).stderr).toMatch(built);
    expect(build(pkg).stderr).toMatch(built);
    expect(build(pkg).stderr).toMatch(upToDate);
  });

  it('shows what the compiler said when it succeeded (its warnings)', () => {
    const pkg = packageCopy();
    const ran = build(pkg, wrappedCc('echo "kernel.c:1: warning: seen by the build" >&2'));
    expect(ran.status).toBe(0);
    expect(ran.stderr).toContain('kernel.c:1: warning: seen by the build');
  });
});

describe('run through a symlinked path', () => {
  it('runs (here: reports the failing cc, exit 1) instead of exiting 0 having done nothing', () => {
    // A copy of the package's build inputs, linked as node_modules/omni-runtime is by a folder
    // install; cc fails at once, so nothing is compiled and the repository's build is untouched.
    const scratch = tempDir();
    const pkg = packageCopy();
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

describe('findNvcc', () => {
  /** A folder holding an executable `nvcc` (under bin/ when `bin`), and that nvcc's path. */
  function withNvcc(bin: boolean): { home: string; nvcc: string } {
    const home = tempDir();
    const dir = bin ? join(home, 'bin') : home;
    mkdirSync(dir, { recursive: true });
    const nvcc = join(dir, 'nvcc');
    writeFileSync(nvcc, '#!/bin/sh\n');
    chmodSync(nvcc, 0o755);
    return { home, nvcc };
  }

  it('takes nvcc from PATH first, then CUDA_HOME/bin, then CUDA_PATH/bin; none: null', () => {
    const onPath = withNvcc(false);
    const home = withNvcc(true);
    const cudaPath = withNvcc(true);
    const empty = tempDir();
    expect(findNvcc({ PATH: `${empty}:${onPath.home}`, CUDA_HOME: home.home })).toBe(onPath.nvcc);
    expect(findNvcc({ PATH: empty, CUDA_HOME: home.home, CUDA_PATH: cudaPath.home })).toBe(home.nvcc);
    expect(findNvcc({ PATH: empty, CUDA_PATH: cudaPath.home })).toBe(cudaPath.nvcc);
    expect(findNvcc({ PATH: empty })).toBeNull();
  });

  it('does not take an empty PATH entry for the current folder', () => {
    // A shell would search the current folder there; a checkout's own ./nvcc is not a toolkit.
    const cwd = withNvcc(false).home;
    const script = join(packageRoot, 'scripts', 'build-native.mjs');
    const probe = `import(${JSON.stringify(script)}).then((m) => console.log(String(m.findNvcc({ PATH: ':' }))))`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { cwd, encoding: 'utf8' });
    expect(run.stdout.trim()).toBe('null');
  });

  it('passes over an nvcc that is not executable, or not a file', () => {
    const onPath = withNvcc(false);
    const home = withNvcc(true);
    chmodSync(onPath.nvcc, 0o644);
    chmodSync(home.nvcc, 0o644);
    expect(findNvcc({ PATH: onPath.home, CUDA_HOME: home.home })).toBeNull();
    const folder = tempDir();
    mkdirSync(join(folder, 'bin', 'nvcc'), { recursive: true }); // searchable, so "executable"
    expect(findNvcc({ PATH: join(folder, 'bin'), CUDA_HOME: folder })).toBeNull();
  });
});

describe('the CUDA library, run as a script', () => {
  /** A package copy whose fixture is up to date (nothing to compile), and its build folder. */
  function withFixture(): { pkg: string; build: string } {
    const pkg = packageCopy();
    const build = join(pkg, 'native', 'build');
    mkdirSync(build);
    copyFileSync(defaultLibraryPath('fixture'), join(build, 'libomni_fixture.so'));
    return { pkg, build };
  }

  it('--require-cuda fails (exit 1) where nvcc fails, the fixture built', () => {
    const { pkg } = withFixture();
    const bin = tempDir();
    writeFileSync(join(bin, 'nvcc'), '#!/bin/sh\necho nvcc-broke >&2\nexit 1\n');
    chmodSync(join(bin, 'nvcc'), 0o755);
    const run = spawnSync(process.execPath, [join(pkg, 'scripts', 'build-native.mjs'), '--require-cuda'], {
      cwd: pkg,
      env: { PATH: bin, CC: '/bin/false' },
      encoding: 'utf8',
    });
    expect(run.stderr).toContain('native: cuda build FAILED (nvcc)');
    expect(run.stderr).toContain('nvcc-broke');
    expect(run.status).toBe(1);
  });

  it('without nvcc, a carried library older than its sources is kept and said to be stale', () => {
    const { pkg, build } = withFixture();
    const cuda = join(build, 'libomni_cuda.so');
    copyFileSync(defaultLibraryPath('fixture'), cuda); // a stand-in
    utimesSync(cuda, longAgo, longAgo);
    const run = spawnSync(process.execPath, [join(pkg, 'scripts', 'build-native.mjs')], {
      cwd: pkg,
      env: { PATH: tempDir(), CC: '/bin/false' },
      encoding: 'utf8',
    });
    expect(run.stderr).toContain('is older than its sources and there is no nvcc here to rebuild it');
    expect(run.status).toBe(0);
    expect(existsSync(cuda)).toBe(true);
  });
});

describe('--force', () => {
  it('rebuilds a library that is up to date (here: cc fails, exit 1, the library stays)', () => {
    const pkg = packageCopy();
    mkdirSync(join(pkg, 'native', 'build'));
    const library = join(pkg, 'native', 'build', 'libomni_fixture.so');
    copyFileSync(defaultLibraryPath('fixture'), library); // written now: newer than every source
    const run = spawnSync(process.execPath, [join(pkg, 'scripts', 'build-native.mjs'), '--force'], {
      cwd: pkg,
      env: { PATH: tempDir(), CC: '/bin/false' },
      encoding: 'utf8',
    });
    expect(run.stderr).toContain('native: fixture build FAILED (cc)');
    expect(run.status).toBe(1);
    expect(existsSync(library)).toBe(true);
  });
});

describe('--require-cuda', () => {
  it('fails (exit 1) where there is no nvcc and no CUDA library to use, the fixture built', () => {
    // A copy of the package's build inputs with a fixture newer than them: nothing to compile.
    const pkg = packageCopy();
    mkdirSync(join(pkg, 'native', 'build'));
    copyFileSync(defaultLibraryPath('fixture'), join(pkg, 'native', 'build', 'libomni_fixture.so'));
    const run = spawnSync(process.execPath, [join(pkg, 'scripts', 'build-native.mjs'), '--require-cuda'], {
      cwd: pkg,
      env: { PATH: tempDir(), CC: '/bin/false' },
      encoding: 'utf8',
    });
    expect(run.stderr).toContain('native: fixture up to date');
    expect(run.stderr).toContain('native: cuda skipped');
    expect(run.status).toBe(1);
  });
});
