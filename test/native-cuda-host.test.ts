/**
 * The CUDA backend's failure paths without a GPU: its host code (native/cuda/context.cu, linear.cu,
 * workspace.cu, built as C++ against the CUDA headers, under ASan + UBSan) linked with a stub CUDA
 * runtime (test/native-cuda-host/stub-runtime.cpp) that fails any chosen call (allocation, copy,
 * launch, synchronization, stream creation, device selection) at any position, sticky or not, and
 * keeps every copied or computed buffer pending on its stream until a synchronization. The driver
 * (driver.cpp) checks after every entry point that nothing is left pending (a failed copy or launch
 * was drained), that live_bytes equals what the stub holds, that close gives everything back, that
 * sticky errors turn the context fatal and others leave it usable; and it runs the same fault
 * sequences on the CPU fixture, whose statuses and counters must match step by step. A GPU run
 * (scripts/gpu-check.sh) covers what the stub cannot: the real runtime's codes and the kernel.
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { nativeBuildDir, nativeIncludeArgs } from '../scripts/build-native.mjs';
import { packageRoot } from '../src/paths.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-cuda-host-');
const cxx = process.env.CXX || 'g++';
const harnessDir = join(packageRoot, 'test', 'native-cuda-host');
const cudaDir = join(packageRoot, 'native', 'cuda');
const fixtureLibrary = join(nativeBuildDir, 'libomni_fixture.so');
const SECTIONS = ['faults', 'compare', 'drain', 'open'];

/** The folder holding cuda_runtime.h, or null: only the headers are needed, no GPU, no nvcc. */
function cudaIncludeDir(): string | null {
  for (const home of [process.env.CUDA_HOME, process.env.CUDA_PATH, '/usr/local/cuda']) {
    if (home && existsSync(join(home, 'include', 'cuda_runtime.h'))) return join(home, 'include');
  }
  return null;
}

/**
 * The stub and driver name CUDA 12.8's process-fatal codes (cudaErrorContained...) unguarded:
 * older headers would fail to compile them, so the harness skips there.
 */
const LEAST_CUDART_VERSION = 12080;

/** CUDART_VERSION as the headers in `include` define it (13000 for 13.0), or null. */
function cudartVersion(include: string): number | null {
  const header = join(include, 'cuda_runtime_api.h');
  const found = existsSync(header) && /^#define CUDART_VERSION\s+(\d+)/m.exec(readFileSync(header, 'utf8'));
  return found ? Number(found[1]) : null;
}

/** Why the harness cannot be built here, or null when it can. */
function unsupported(include: string | null): string | null {
  if (include === null) return 'no CUDA headers (CUDA_HOME, CUDA_PATH, /usr/local/cuda)';
  const version = cudartVersion(include);
  if (version === null || version < LEAST_CUDART_VERSION) {
    return `CUDA headers in ${include} older than 12.8 (CUDART_VERSION ${version ?? 'not found'})`;
  }
  const probe = spawnSync(cxx, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  if (probe.error || probe.status !== 0) return `no C++ compiler (${cxx})`;
  if (!existsSync(fixtureLibrary)) return `${fixtureLibrary} is not built`;
  return null;
}

const include = cudaIncludeDir();
const skip = unsupported(include);

describe.runIf(skip === null)(`CUDA host code on a stub runtime${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let program = '';
  beforeAll(async () => {
    program = join(tempDir(), 'cuda-host-driver');
    const args = [
      '-std=c++17',
      '-g',
      '-O1',
      '-fno-omit-frame-pointer',
      '-fsanitize=address,undefined',
      '-fno-sanitize-recover=all',
      `-I${include}`,
      ...nativeIncludeArgs,
      `-I${cudaDir}`,
      `-I${harnessDir}`,
      '-x',
      'c++',
      ...['context.cu', 'linear.cu', 'workspace.cu'].map((f) => join(cudaDir, f)),
      '-x',
      'none',
      join(harnessDir, 'stub-runtime.cpp'),
      join(harnessDir, 'driver.cpp'),
      '-ldl',
      '-o',
      program,
    ];
    await promisify(execFile)(cxx, args, { timeout: 300_000 });
  }, 320_000);

  const run = (sections: string[] = []) =>
    spawnSync(program, [fixtureLibrary, ...sections], {
      encoding: 'utf8',
      env: { ...process.env, ASAN_OPTIONS: 'detect_leaks=1', UBSAN_OPTIONS: 'print_stacktrace=1' },
      timeout: 120_000,
    });

  it('every injected fault is drained, released, mapped as the fixture maps it, and counted alike', () => {
    const result = run();
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    let sum = 0;
    for (const name of SECTIONS) {
      const match = new RegExp(`^section ${name}: (\\d+) checks$`, 'm').exec(result.stdout);
      expect(match, `section ${name}`).not.toBeNull();
      const checks = Number(match![1]);
      expect(checks, `checks in ${name}`).toBeGreaterThan(0);
      sum += checks;
    }
    expect(result.stdout).toMatch(new RegExp(`^driver: ${sum} checks passed$`, 'm'));
  });

  it('canary-undrained: work left pending on a stream fails the run', () => {
    const result = run(['canary-undrained']);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('canary-undrained: 2 operations pending');
  });
});
