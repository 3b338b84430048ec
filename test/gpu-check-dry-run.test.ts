/**
 * scripts/gpu-check.mjs runs once, unattended, on a GPU machine lent for minutes: it must not have
 * rotted. Its --dry-run takes every step with the fixture standing in for CUDA.
 */
import { execFile, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { NativeStatus } from '../src/native/index.js';
import { packageRoot } from '../src/paths.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-gpu-check-load-');

function dryRun(
  nodeArgs: string[] = [],
  scriptArgs: string[] = [],
): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...nodeArgs, join(packageRoot, 'scripts', 'gpu-check.mjs'), '--dry-run', ...scriptArgs],
      { cwd: packageRoot, env: { ...process.env, OMNI_BACKEND: '', OMNI_CUDA_DEVICE: '' }, timeout: 120_000 },
      (err, stdout) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout }),
    );
  });
}

describe('gpu-check.mjs', () => {
  it('--dry-run passes every step: parity on every shape, no residue, both tables', {
    timeout: 150_000,
  }, async () => {
    const { code, stdout } = await dryRun();
    const lines = stdout.trim().split('\n');
    expect(lines.at(-1)).toBe('gpu-check: PASS');
    expect(code).toBe(0);
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([]);
    expect(lines.filter((l) => /^ok {3}\d+ x \d+ -> \d+:/.test(l)).length).toBeGreaterThanOrEqual(5);
    expect(lines.some((l) => l.startsWith('no residue: ok'))).toBe(true);
    expect(lines.some((l) => l.startsWith('| cuda (fixture stand-in) |'))).toBe(true);
  });

  // What gpu-check.sh runs under compute-sanitizer: small shapes, the limits, evictions; nothing else.
  it('--sanitize runs the small and limit shapes and the evictions, then the verdict', {
    timeout: 150_000,
  }, async () => {
    const { code, stdout } = await dryRun([], ['--sanitize']);
    const lines = stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([]);
    const shapes = lines.filter((l) => /^ok {3}\d+ x \d+ -> \d+:/.test(l)).map((l) => l.split(':')[0]);
    expect(shapes).toEqual(
      expect.arrayContaining(['ok   65536 x 8 -> 8', 'ok   2 x 16384 -> 3', 'ok   2 x 3 -> 16384']),
    );
    expect(lines.some((l) => l.startsWith('sanitize evictions: ok'))).toBe(true);
    expect(lines.some((l) => l.startsWith('no residue') || l.startsWith('| '))).toBe(false);
    expect(lines.at(-1)).toBe('gpu-check: PASS');
    expect(code).toBe(0);
  });

  // The check runs once, unattended: one call that fails must not hide the results of the others.
  it('a call that throws mid-run is one FAIL line; the later checks still run and the verdict is printed', {
    timeout: 150_000,
  }, async () => {
    const failing = join(packageRoot, 'dist', 'test', 'fixtures', 'gpu-check-failing-call.js');
    const { code, stdout } = await dryRun(['--import', pathToFileURL(failing).href]);
    const lines = stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([
      expect.stringMatching(/^FAIL parity 65,1023,129: OMNI_ERR_NATIVE /),
    ]);
    // Every other parity shape and every later section still reports.
    expect(lines.filter((l) => /^ok {3}\d+ x \d+ -> \d+:/.test(l)).length).toBeGreaterThanOrEqual(5);
    expect(lines.some((l) => l.startsWith('no residue: ok'))).toBe(true);
    expect(lines.some((l) => l.startsWith('| 64 x 1024 -> 1024 |'))).toBe(true);
    expect(lines.some((l) => l.startsWith('| fixture |'))).toBe(true);
    expect(lines.at(-1)).toBe('gpu-check: 1 check(s) FAILED');
    expect(code).toBe(1);
  });

  it('a parity shape whose output is off is one FAIL check; the verdict says so', {
    timeout: 150_000,
  }, async () => {
    const wrong = join(packageRoot, 'dist', 'test', 'fixtures', 'gpu-check-wrong-output.js');
    const { code, stdout } = await dryRun(['--import', pathToFileURL(wrong).href]);
    const lines = stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([
      expect.stringMatching(/^FAIL 65 x 1023 -> 129: /),
      'FAIL parity 65,1023,129',
    ]);
    expect(lines.at(-1)).toBe('gpu-check: 1 check(s) FAILED');
    expect(code).toBe(1);
  });

  it('stats() that throws: FAIL lines for the steps that read it, and the verdict is still printed', {
    timeout: 150_000,
  }, async () => {
    const failing = join(packageRoot, 'dist', 'test', 'fixtures', 'gpu-check-failing-stats.js');
    const { code, stdout } = await dryRun(['--import', pathToFileURL(failing).href]);
    const lines = stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([
      expect.stringMatching(/^FAIL no residue: OMNI_ERR_NATIVE /),
      expect.stringMatching(/^FAIL counters: OMNI_ERR_NATIVE /),
      expect.stringMatching(/^FAIL cuda stats: OMNI_ERR_NATIVE /),
    ]);
    expect(lines.at(-1)).toBe('gpu-check: 3 check(s) FAILED');
    expect(code).toBe(1);
  });

  // The float32 bound grows with K; exact sums keep a small error visible at MAX_FEATURES.
  it('an error the size of a lost K slice at 16,384 inputs passes the bound but fails the exact sums', {
    timeout: 150_000,
  }, async () => {
    const lost = join(packageRoot, 'dist', 'test', 'fixtures', 'gpu-check-lost-slice.js');
    const { code, stdout } = await dryRun(['--import', pathToFileURL(lost).href]);
    const lines = stdout.trim().split('\n');
    expect(lines.some((l) => l.startsWith('ok   2 x 16384 -> 3: '))).toBe(true);
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([
      expect.stringMatching(/^FAIL 3 x 16384 -> 70: cuda \d/),
      'FAIL exact sums 3,16384,70',
    ]);
    expect(lines.at(-1)).toBe('gpu-check: 1 check(s) FAILED');
    expect(code).toBe(1);
  });

  // The counters are checked against the workspace rule, not only against each other.
  it('a backend that counts one call and sync more than the rule says is a FAIL check, with its counters', {
    timeout: 150_000,
  }, async () => {
    const extra = join(packageRoot, 'dist', 'test', 'fixtures', 'gpu-check-extra-sync.js');
    const { code, stdout } = await dryRun(['--import', pathToFileURL(extra).href]);
    const lines = stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([
      expect.stringMatching(/^FAIL counters on cuda: .*"streamSyncs":8,.*"calls":6\}, want /),
      expect.stringMatching(/^FAIL counters on fixture: .*"streamSyncs":8,.*"calls":6\}, want /),
    ]);
    expect(lines.at(-1)).toBe('gpu-check: 2 check(s) FAILED');
    expect(code).toBe(1);
  });

  it('a library that accepts a NULL context is one FAIL check', { timeout: 150_000 }, async () => {
    const lax = join(packageRoot, 'dist', 'test', 'fixtures', 'gpu-check-null-context.js');
    const { code, stdout } = await dryRun(['--import', pathToFileURL(lax).href]);
    const lines = stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([
      `FAIL raw call with a null context returned ${NativeStatus.OK}`,
    ]);
    expect(lines.at(-1)).toBe('gpu-check: 1 check(s) FAILED');
    expect(code).toBe(1);
  });

  // The CUDA library built here may need a newer driver or glibc than the GPU machine has.
  it('a CUDA library that cannot be loaded is a setup failure (exit 3), not a failed check', () => {
    const root = tempDir();
    cpSync(join(packageRoot, 'dist', 'src'), join(root, 'dist', 'src'), { recursive: true });
    mkdirSync(join(root, 'scripts'));
    copyFileSync(join(packageRoot, 'scripts', 'gpu-check.mjs'), join(root, 'scripts', 'gpu-check.mjs'));
    symlinkSync(join(packageRoot, 'node_modules'), join(root, 'node_modules'));
    mkdirSync(join(root, 'native', 'build'), { recursive: true });
    const build = join(packageRoot, 'native', 'build');
    copyFileSync(join(build, 'libomni_fixture.so'), join(root, 'native', 'build', 'libomni_fixture.so'));
    writeFileSync(join(root, 'native', 'build', 'libomni_cuda.so'), 'not a shared library\n');
    const run = spawnSync(process.execPath, [join(root, 'scripts', 'gpu-check.mjs')], {
      cwd: root,
      env: { ...process.env, OMNI_BACKEND: '', OMNI_CUDA_DEVICE: '' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stdout.trim().split('\n').at(-1)).toMatch(
      /^gpu-check: cannot load the cuda library: OMNI_ERR_\w+ /,
    );
    expect(run.status).toBe(3);
  });
});
