/** `omni-runtime bench admission` through the built command line: both sides measured, a ratio. */
import { describe, expect, it } from 'vitest';
import { runCli } from './fixtures/cli-process.js';

interface Side {
  name: string;
  opsPerSec: number;
  rounds: number[];
}

describe('omni-runtime bench admission', () => {
  it.each([[[]], [['--cost', '3']]])('measures admission against raw Atomics %j', async (extra: string[]) => {
    const { code, stdout, stderr } = await runCli([
      ...['bench', 'admission', '--threads', '2', '--duration', '0.4', '--rounds', '1', '--json'],
      ...extra,
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as { threads: number; raw: Side; admission: Side; ratio: number };
    expect(result.threads).toBe(2);
    expect(result.raw.opsPerSec).toBeGreaterThan(0);
    expect(result.admission.opsPerSec).toBeGreaterThan(0);
    expect(result.ratio).toBeCloseTo(result.admission.opsPerSec / result.raw.opsPerSec, 10);
  });
});
