/**
 * The CPU fixture under AddressSanitizer + UBSan (with the leak check) and under ThreadSanitizer:
 * its sources built into one program with a C driver (test/native/*.c) that calls every ABI entry
 * point directly, no koffi between, through its ownership and fault paths (see the sections in
 * test/native/abi-driver.c). A sanitizer report exits non-zero. The driver prints its checks per
 * section, so one that silently stopped running fails here too, and deliberate defects (the
 * canaries) prove each sanitizer is on and reports in this environment.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { fixtureDir, fixtureSources, nativeIncludeArgs } from '../scripts/build-native.mjs';
import { packageRoot } from '../src/paths.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-sanitizers-');
const cc = process.env.CC || 'cc';
const driverDir = join(packageRoot, 'test', 'native');
const driverSources = readdirSync(driverDir)
  .filter((f) => f.endsWith('.c'))
  .map((f) => join(driverDir, f));
const SECTIONS = [
  'lifecycle',
  'open-faults',
  'upload-faults',
  'call-faults',
  'arguments',
  'poisoned',
  'numerics',
  'threads',
];

const ASAN = ['-fsanitize=address,undefined', '-fno-sanitize-recover=all'];
// GCC instruments target_clones' ifunc resolver, which the loader runs while relocating, before
// the TSan runtime is initialised: a segfault before main. The TSan build takes the baseline
// kernel alone (OMNI_NO_CLONES), the same C.
const TSAN = ['-fsanitize=thread', '-DOMNI_NO_CLONES'];
const env = {
  ...process.env,
  ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=0:halt_on_error=1',
  UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1',
  TSAN_OPTIONS: 'halt_on_error=1',
};

/** Bounds each probe step: a compiler or sanitizer runtime that hangs skips, it does not hang. */
const PROBE_TIMEOUT_MS = 30_000;

/**
 * Why `flags` cannot build and run a trivial program here (its run is what fails where the
 * sanitizer's runtime cannot work: ASan's shadow refused under `ulimit -v`, LSan under ptrace),
 * or null when they can. Its folder goes at once: when both probes fail every test is skipped,
 * and a file whose tests are all skipped runs no afterAll (tempDirs would leave it).
 */
function unsupported(flags: string[]): string | null {
  const dir = mkdtempSync(join(tmpdir(), 'omni-sanitizer-probe-'));
  try {
    const source = join(dir, 'probe.c');
    writeFileSync(source, 'int main(void) { return 0; }\n');
    const built = spawnSync(cc, [...flags, source, '-o', join(dir, 'probe')], {
      encoding: 'utf8',
      timeout: PROBE_TIMEOUT_MS,
    });
    if (built.error || built.status !== 0) return `${cc} cannot link ${flags[0]}`;
    const ran = spawnSync(join(dir, 'probe'), { encoding: 'utf8', env, timeout: PROBE_TIMEOUT_MS });
    const why = String(ran.stderr || ran.error || `status ${ran.status}`).trim();
    return ran.status === 0 ? null : `a ${flags[0]} program does not run here: ${why.slice(0, 80)}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Builds the fixture and the driver with `flags`. Both builds start at once, at load: they are most
 * of this file's time. Settled, so a failed build is reported by the describe that needs it.
 */
function buildDriver(flags: string[]): Promise<{ program: string } | { error: unknown }> {
  const out = join(tempDir(), 'abi-driver');
  const args = [
    '-std=c11',
    '-g',
    '-O1',
    '-fno-omit-frame-pointer',
    ...flags,
    ...nativeIncludeArgs,
    `-I${fixtureDir}`,
    ...fixtureSources(),
    ...driverSources,
    '-o',
    out,
    '-lm',
    '-pthread',
  ];
  return promisify(execFile)(cc, args, { timeout: 300_000 }).then(
    () => ({ program: out }),
    (error: unknown) => ({ error }),
  );
}

async function built(build: ReturnType<typeof buildDriver> | null): Promise<string> {
  const result = await build!;
  if ('error' in result) throw result.error;
  return result.program;
}

function runDriver(program: string, sections: string[] = []) {
  return spawnSync(program, sections, { encoding: 'utf8', env, timeout: 50_000 });
}

/** Every section ran and counted checks, and the total is their sum. */
function expectAllSections(stdout: string): void {
  let sum = 0;
  for (const name of SECTIONS) {
    const match = new RegExp(`^section ${name}: (\\d+) checks$`, 'm').exec(stdout);
    expect(match, `section ${name}`).not.toBeNull();
    const checks = Number(match![1]);
    expect(checks, `checks in ${name}`).toBeGreaterThan(0);
    sum += checks;
  }
  expect(stdout).toMatch(new RegExp(`^driver: ${sum} checks passed$`, 'm'));
}

const asanSkip = unsupported(ASAN);
const tsanSkip = unsupported(TSAN);
const asanBuild = asanSkip === null ? buildDriver(ASAN) : null;
const tsanBuild = tsanSkip === null ? buildDriver(TSAN) : null;

describe.runIf(asanSkip === null)(`under ASan + UBSan${asanSkip ? ` (skipped: ${asanSkip})` : ''}`, () => {
  let program = '';
  beforeAll(async () => {
    program = await built(asanBuild);
  });

  it('every entry point, fault position and argument check runs clean, leaking nothing', () => {
    const run = runDriver(program);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expectAllSections(run.stdout);
  });

  it.each([
    ['canary-leak', 'LeakSanitizer: detected memory leaks'],
    ['canary-overflow', 'AddressSanitizer: heap-buffer-overflow'],
    ['canary-undefined', 'runtime error: signed integer overflow'],
    // A write just past what fx_alloc was asked for, inside its rounding to 64 bytes.
    ['canary-pad', 'AddressSanitizer: use-after-poison'],
  ])('%s: the sanitizer reports it and the run fails', (section, report) => {
    const run = runDriver(program, [section]);
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain(report);
  });
});

describe.runIf(tsanSkip === null)(`under TSan${tsanSkip ? ` (skipped: ${tsanSkip})` : ''}`, () => {
  let program = '';
  beforeAll(async () => {
    program = await built(tsanBuild);
  });

  it('contexts from four threads at once (and every other section) run race-free', () => {
    const run = runDriver(program);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expectAllSections(run.stdout);
  });

  it('canary-race: the sanitizer reports it and the run fails', () => {
    const run = runDriver(program, ['canary-race']);
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain('ThreadSanitizer: data race');
  });
});
