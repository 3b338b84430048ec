/**
 * scripts/gpu-check.sh on a GPU machine, up to the point where it starts scripts/gpu-check.mjs:
 * which native libraries it ends up running. A library built there matches that machine's driver;
 * one carried in .gpu/native-build (built on a development machine) may need a newer driver, so it
 * may only stand in for what could not be built there.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-gpu-check-script-');

/** A copy of what gpu-check.sh needs, with gpu-check.mjs replaced by one that names the libraries. */
function gpuMachineTree(): { root: string; bin: string } {
  const scratch = tempDir();
  const root = join(scratch, 'repo');
  mkdirSync(join(root, 'scripts'), { recursive: true });
  for (const f of ['gpu-check.sh', 'build-native.mjs']) {
    copyFileSync(join(packageRoot, 'scripts', f), join(root, 'scripts', f));
  }
  cpSync(join(packageRoot, 'native'), join(root, 'native'), {
    recursive: true,
    filter: (src) => !src.endsWith(join('native', 'build')),
  });
  // It names its arguments too, and exits with CHECK_EXIT (a --sanitize run with 0).
  writeFileSync(
    join(root, 'scripts', 'gpu-check.mjs'),
    "import { readFileSync } from 'node:fs';\n" +
      "for (const lib of ['libomni_cuda.so', 'libomni_fixture.so'])\n" +
      "  console.log(lib + ': ' + readFileSync('native/build/' + lib, 'utf8').trim());\n" +
      "console.log('check ran with [' + process.argv.slice(2).join(' ') + ']');\n" +
      'if (process.env.CHECK_STDERR) console.error(process.env.CHECK_STDERR);\n' +
      "process.exit(process.argv.includes('--sanitize') ? 0 : Number(process.env.CHECK_EXIT ?? 0));\n",
  );
  // As carried: node_modules unpacked, dist/ built, the development machine's libraries.
  mkdirSync(join(root, 'node_modules'));
  mkdirSync(join(root, 'dist', 'src'), { recursive: true });
  writeFileSync(join(root, 'dist', 'src', 'index.js'), '');
  mkdirSync(join(root, '.gpu', 'native-build'), { recursive: true });
  writeFileSync(join(root, '.gpu', 'native-build', 'libomni_cuda.so'), 'carried\n');
  writeFileSync(join(root, '.gpu', 'native-build', 'libomni_fixture.so'), 'carried\n');
  // An nvcc that works: it writes a stand-in library wherever -o says.
  const bin = join(scratch, 'bin');
  mkdirSync(bin);
  writeFileSync(
    join(bin, 'nvcc'),
    '#!/bin/sh\n' +
      'if [ "$1" = --version ]; then echo "Cuda compilation tools, stand-in"; exit 0; fi\n' +
      'while [ $# -gt 0 ]; do if [ "$1" = -o ]; then echo "built here" >"$2"; exit 0; fi; shift; done\n' +
      'exit 1\n',
  );
  chmodSync(join(bin, 'nvcc'), 0o755);
  return { root, bin };
}

/**
 * A compute-sanitizer that says which tool it runs, then runs the command after its options; the
 * tool named by SANITIZER_REPORTS instead reports an error, as the real one does with
 * --error-exitcode.
 */
function addSanitizer(bin: string): void {
  writeFileSync(
    join(bin, 'compute-sanitizer'),
    '#!/bin/sh\n' +
      'tool=; code=1\n' +
      'while [ $# -gt 0 ]; do case $1 in\n' +
      '  --tool) tool=$2; shift 2 ;;\n' +
      '  --error-exitcode) code=$2; shift 2 ;;\n' +
      '  --*) shift 2 ;;\n' +
      '  *) break ;;\n' +
      'esac; done\n' +
      'echo "sanitizer $tool runs: $*"\n' +
      // As seen on a gVisor machine: the tool refuses the device, then the check's calls fail.
      '[ -n "$SANITIZER_REFUSES" ] && { echo "========= Error: Device not supported"; exit "$code"; }\n' +
      '[ "$tool" = "$SANITIZER_REPORTS" ] && exit "$code"\n' +
      'exec "$@"\n',
  );
  chmodSync(join(bin, 'compute-sanitizer'), 0o755);
}

function runCheck(root: string, bin: string, env: Record<string, string> = {}, args: string[] = []) {
  return spawnSync('bash', [join(root, 'scripts', 'gpu-check.sh'), ...args], {
    cwd: root,
    env: {
      PATH: [bin, dirname(process.execPath), '/usr/bin', '/bin'].join(':'),
      HOME: root,
      // The carried fixture stands in, rather than one cc builds here.
      CC: '/bin/false',
      CUDA_HOME: join(root, 'no-cuda-here'),
      ...env,
    },
    encoding: 'utf8',
    timeout: 120_000,
  });
}

const SANITIZED = ['memcheck', 'racecheck', 'initcheck'];

describe('gpu-check.sh', () => {
  it('builds the CUDA library there even when the fixture does not build (cc fails)', () => {
    const { root, bin } = gpuMachineTree();
    const run = runCheck(root, bin);
    expect(run.stdout).toContain('libomni_cuda.so: built here');
    expect(run.stdout).toContain('libomni_fixture.so: carried');
    expect(run.status).toBe(0);
  });

  // The carried library stands in for what could not be built, but a failed nvcc is not one that
  // was never there: the check ran on a library built elsewhere, and said PASS (exit 0).
  it('an nvcc that fails to build: the carried CUDA library stands in, the check runs, then exit 3', () => {
    const { root, bin } = gpuMachineTree();
    writeFileSync(
      join(bin, 'nvcc'),
      '#!/bin/sh\n[ "$1" = --version ] && { echo "Cuda compilation tools, stand-in"; exit 0; }\n' +
        'echo "kernel.cu(10): error: stand-in" >&2\nexit 1\n',
    );
    const logs = join(root, 'logs');
    const run = runCheck(root, bin, { GPU_CHECK_LOGS: logs });
    expect(run.stdout).toContain('libomni_cuda.so: carried');
    expect(run.stdout).toContain('check ran with []');
    expect(run.stdout).toContain('gpu-check: FAILED: nvcc here could not build libomni_cuda.so');
    expect(readFileSync(join(logs, 'build-native.log'), 'utf8')).toContain('kernel.cu(10): error: stand-in');
    expect(run.status).toBe(3);
  });

  it('without nvcc the carried CUDA library stands in and the check decides (exit 0)', () => {
    const { root, bin } = gpuMachineTree();
    rmSync(join(bin, 'nvcc'));
    const run = runCheck(root, bin);
    expect(run.stdout).toContain('libomni_cuda.so: carried');
    expect(run.stdout).not.toContain('FAILED: nvcc');
    expect(run.status).toBe(0);
  });

  it('then runs the small shapes under memcheck, racecheck and initcheck, after the main figures', () => {
    const { root, bin } = gpuMachineTree();
    addSanitizer(bin);
    const logs = join(root, 'logs');
    const run = runCheck(root, bin, { GPU_CHECK_LOGS: logs });
    const lines = run.stdout.split('\n');
    const main = lines.indexOf('check ran with []');
    expect(main).toBeGreaterThanOrEqual(0);
    for (const tool of SANITIZED) {
      const at = lines.indexOf(`gpu-check: ${tool} ok`);
      expect({ tool, after: at > main }).toEqual({ tool, after: true });
      // Its whole output is in its log, not in the check's.
      expect(readFileSync(join(logs, `sanitizer-${tool}.log`), 'utf8').split('\n')).toEqual([
        `sanitizer ${tool} runs: node scripts/gpu-check.mjs --sanitize`,
        'libomni_cuda.so: built here',
        'libomni_fixture.so: carried',
        'check ran with [--sanitize]',
        '',
      ]);
    }
    expect(run.stdout).not.toContain('check ran with [--sanitize]');
    expect(run.status).toBe(0);
  });

  it('a sanitizer report fails the check (exit 1); the other tools still run', () => {
    const { root, bin } = gpuMachineTree();
    addSanitizer(bin);
    const run = runCheck(root, bin, { SANITIZER_REPORTS: 'racecheck' });
    const lines = run.stdout.split('\n');
    expect(lines).toContain('gpu-check: memcheck ok');
    expect(lines).toContain('gpu-check: racecheck FAILED (exit 9)');
    // The head of the failing tool's log is shown, as the default log folder keeps it.
    expect(lines).toContain('sanitizer racecheck runs: node scripts/gpu-check.mjs --sanitize');
    expect(existsSync(join(root, 'native', 'build', 'sanitizer-racecheck.log'))).toBe(true);
    expect(lines).toContain('gpu-check: initcheck ok');
    expect(run.status).toBe(1);
  });

  // KINDS.md: under gVisor compute-sanitizer answers "Device not supported", then error 999. The
  // tool checked nothing there: no verdict, as for one that cannot start, and the other tools
  // (which would be refused the same way) are not run.
  it('a sanitizer that refuses the device gives no verdict: the main check decides (exit 0)', () => {
    const { root, bin } = gpuMachineTree();
    addSanitizer(bin);
    const run = runCheck(root, bin, { SANITIZER_REFUSES: '1' });
    const lines = run.stdout.split('\n');
    expect(lines).toContain(
      'gpu-check: memcheck: compute-sanitizer does not support this device; no verdict',
    );
    expect(run.stdout).not.toContain('FAILED');
    // The tools' own output goes to their logs, not to stdout: none for the tools not run.
    expect(existsSync(join(root, 'native', 'build', 'sanitizer-memcheck.log'))).toBe(true);
    expect(existsSync(join(root, 'native', 'build', 'sanitizer-racecheck.log'))).toBe(false);
    expect(existsSync(join(root, 'native', 'build', 'sanitizer-initcheck.log'))).toBe(false);
    expect(run.status).toBe(0);
  });

  // The device tool returns only the end of the output: a long sanitizer report printed after
  // the main figures can push them out of it, so they are kept in a log of their own too.
  it('the main check output also goes to GPU_CHECK_LOGS/gpu-check.log, and its exit code is kept', () => {
    const { root, bin } = gpuMachineTree();
    const logs = join(root, 'logs');
    const run = runCheck(root, bin, { GPU_CHECK_LOGS: logs, CHECK_EXIT: '1' });
    expect(run.stdout).toContain('check ran with []');
    expect(readFileSync(join(logs, 'gpu-check.log'), 'utf8').split('\n')).toEqual([
      'libomni_cuda.so: built here',
      'libomni_fixture.so: carried',
      'check ran with []',
      '',
    ]);
    expect(run.status).toBe(1);
  });

  // The sanitizer runs are optional: they get what is left of the check's time budget, and a run
  // needs 10 s at least to say anything: with less left it is skipped, not started.
  it.each(['0', '9'])(
    'with %s s of its time budget, the sanitizer runs are skipped without a verdict',
    (budget) => {
      const { root, bin } = gpuMachineTree();
      addSanitizer(bin);
      const run = runCheck(root, bin, { GPU_CHECK_BUDGET_S: budget });
      const lines = run.stdout.split('\n');
      for (const tool of SANITIZED) {
        expect(lines).toContain(`gpu-check: ${tool} skipped: the ${budget} s budget is spent; no verdict`);
      }
      expect(run.stdout).not.toContain('sanitizer ');
      expect(run.status).toBe(0);
    },
  );

  // Read as decimal, as it is documented: bash's arithmetic took a leading 0 for octal, so 09
  // ended the script with an arithmetic error (exit 1, a FAIL) after a passing check, and 010
  // was 8 s.
  it('a zero-padded budget is whole seconds in decimal (09: 9 s, skipped; exit 0)', () => {
    const { root, bin } = gpuMachineTree();
    addSanitizer(bin);
    const run = runCheck(root, bin, { GPU_CHECK_BUDGET_S: '09' });
    const lines = run.stdout.split('\n');
    for (const tool of SANITIZED) {
      expect(lines).toContain(`gpu-check: ${tool} skipped: the 9 s budget is spent; no verdict`);
    }
    expect(run.status).toBe(0);
  });

  // Each run's own limit is what is left of the budget when that is under 60 s.
  it('a sanitizer run is limited to what is left of the budget', () => {
    const { root, bin } = gpuMachineTree();
    addSanitizer(bin);
    const limits = join(root, 'limits.log');
    writeFileSync(join(bin, 'timeout'), '#!/bin/sh\necho "$1" >>"$TIMEOUT_LOG"\nshift\nexec "$@"\n');
    chmodSync(join(bin, 'timeout'), 0o755);
    const run = runCheck(root, bin, { GPU_CHECK_BUDGET_S: '40', TIMEOUT_LOG: limits });
    expect(run.status).toBe(0);
    // The build's and the main check's own limits first, then the three runs'.
    const all = readFileSync(limits, 'utf8').trim().split('\n').map(Number);
    expect(all).toContain(270);
    const sanitizers = all.slice(all.indexOf(270) + 1);
    expect(sanitizers).toHaveLength(3);
    for (const limit of sanitizers) expect(limit).toBeGreaterThanOrEqual(10);
    for (const limit of sanitizers) expect(limit).toBeLessThanOrEqual(40);
  });

  it('the main check log holds its stderr too', () => {
    const { root, bin } = gpuMachineTree();
    const logs = join(root, 'logs');
    const run = runCheck(root, bin, { GPU_CHECK_LOGS: logs, CHECK_STDERR: 'said on stderr' });
    expect(run.status).toBe(0);
    expect(readFileSync(join(logs, 'gpu-check.log'), 'utf8').split('\n')).toContain('said on stderr');
  });

  it('a GPU_CHECK_BUDGET_S that is not whole seconds is a setup error (exit 3) before any work', () => {
    const { root, bin } = gpuMachineTree();
    const run = runCheck(root, bin, { GPU_CHECK_BUDGET_S: '5m' });
    expect(run.stdout).not.toContain('check ran with');
    expect(run.status).toBe(3);
  });

  it('a main check that could not open the device (exit 2) runs no sanitizer and keeps its exit code', () => {
    const { root, bin } = gpuMachineTree();
    addSanitizer(bin);
    const run = runCheck(root, bin, { CHECK_EXIT: '2' });
    expect(run.stdout).toContain('check ran with []');
    expect(run.stdout).not.toContain('sanitizer ');
    expect(run.status).toBe(2);
  });

  it('a --dry-run (no CUDA call to watch) runs no sanitizer', () => {
    const { root, bin } = gpuMachineTree();
    addSanitizer(bin);
    const run = runCheck(root, bin, {}, ['--dry-run']);
    expect(run.stdout).toContain('check ran with [--dry-run]');
    expect(run.stdout).not.toContain('sanitizer');
    expect(run.status).toBe(0);
  });

  it('without compute-sanitizer the main check decides alone, and says the runs were skipped', () => {
    const { root, bin } = gpuMachineTree();
    const failed = runCheck(root, bin, { CHECK_EXIT: '1' });
    expect(failed.stdout).toContain('gpu-check: no compute-sanitizer here; the sanitizer runs were skipped');
    expect(failed.status).toBe(1);
  });
});
