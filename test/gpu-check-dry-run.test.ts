/**
 * scripts/gpu-check.mjs runs once, unattended, on a GPU machine lent for minutes: it must not have
 * rotted. Its --dry-run takes every step with the fixture standing in for CUDA.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';

function dryRun(): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(packageRoot, 'scripts', 'gpu-check.mjs'), '--dry-run'],
      { cwd: packageRoot, env: { ...process.env, OMNI_BACKEND: '', OMNI_CUDA_DEVICE: '' }, timeout: 120_000 },
      (err, stdout) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout }),
    );
  });
}

describe('gpu-check --dry-run', () => {
  it('passes every step: parity on every shape, no residue, both tables', { timeout: 150_000 }, async () => {
    const { code, stdout } = await dryRun();
    const lines = stdout.trim().split('\n');
    expect(lines.at(-1)).toBe('gpu-check: PASS');
    expect(code).toBe(0);
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([]);
    expect(lines.filter((l) => /^ok {3}\d+ x \d+ -> \d+:/.test(l)).length).toBeGreaterThanOrEqual(5);
    expect(lines.some((l) => l.startsWith('no residue: ok'))).toBe(true);
    expect(lines.some((l) => l.startsWith('| cuda (fixture stand-in) |'))).toBe(true);
  });
});
