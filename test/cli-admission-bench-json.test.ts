/**
 * `omni-runtime bench admission --json`, through the built command line: what the result says
 * about the run (its mode, its baseline, its rounds) and that each side's figure is the median of
 * its rounds. No figure is compared with a speed.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from './fixtures/cli-process.js';

interface Side {
  name: string;
  opsPerSec: number;
  rounds: number[];
}
interface AdmissionBench {
  threads: number;
  mode: string;
  cost: number | null;
  rounds: number;
  roundSeconds: number;
  raw: Side;
  admission: Side;
  ratio: number;
}

async function bench(args: string[]): Promise<AdmissionBench> {
  const { code, stdout, stderr } = await runCli(['bench', 'admission', '--json', ...args]);
  expect(stderr).toBe('');
  expect(code).toBe(0);
  return JSON.parse(stdout) as AdmissionBench;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

describe('omni-runtime bench admission --json', () => {
  it('units: a 64-bit baseline, every round of each side kept, each side the median of its rounds', async () => {
    const r = await bench(['--threads', '1', '--cost', '3', '--rounds', '6', '--duration', '0.6']);
    expect(r).toMatchObject({ threads: 1, mode: 'units', cost: 3, rounds: 6 });
    // --duration is over all rounds of both sides: 0.6 s / (2 x 6).
    expect(r.roundSeconds).toBeCloseTo(0.05, 10);
    expect(r.raw.name).toMatch(/64-bit/);
    expect(r.admission.name).toMatch(/tryAdmit\(3\)/);
    for (const side of [r.raw, r.admission]) {
      expect(side.rounds).toHaveLength(6);
      for (const x of side.rounds) expect(x).toBeGreaterThan(0);
      expect(side.opsPerSec).toBe(median(side.rounds));
    }
    // Each side's rounds are its own (they come from different loops, so they differ).
    expect(r.admission.rounds).not.toEqual(r.raw.rounds);
    expect(r.ratio).toBe(r.admission.opsPerSec / r.raw.opsPerSec);
  });

  it('requests only by default: 2 threads, an Int32 baseline, no cost', async () => {
    const r = await bench(['--rounds', '1', '--duration', '0.2']);
    expect(r).toMatchObject({ threads: 2, mode: 'requests', cost: null, rounds: 1 });
    expect(r.roundSeconds).toBeCloseTo(0.1, 10);
    expect(r.raw.name).toMatch(/Int32/);
    expect(r.admission.opsPerSec).toBe(r.admission.rounds[0]);
  });
});
