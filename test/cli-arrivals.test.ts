/**
 * The open-loop arrival process (prng.ts ArrivalProcess): a Poisson process at the rate asked
 * for, with rows uniform in 1..maxRows, the same for the same seed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ArrivalProcess, phaseSeed } from '../src/cli/prng.js';

const N = 20_000;

function draw(seed: number, rate: number, maxRows: number, n: number) {
  const process = new ArrivalProcess(seed, rate, maxRows);
  return Array.from({ length: n }, () => process.next());
}

describe('ArrivalProcess', () => {
  it('gives the same schedule for the same seed, and arrivals that never go back in time', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.double({ min: 0.01, max: 1e5, noNaN: true }),
        (seed, rate) => {
          const a = draw(seed, rate, 16, 200);
          expect(draw(seed, rate, 16, 200)).toEqual(a);
          for (let i = 1; i < a.length; i++) expect(a[i]!.at).toBeGreaterThanOrEqual(a[i - 1]!.at);
        },
      ),
      { numRuns: 50 },
    );
  });

  it('spaces arrivals 1000 / rate ms apart on average, exponentially (sd = mean), rows uniform', () => {
    // Fixed seeds: the draws, and so this check, are the same on every run.
    const cases = [
      [1, 0.5, 1],
      [9, 37, 16],
      [phaseSeed(1, 0), 1456, 16],
      [2 ** 32 - 1, 250_000, 64],
    ] as const;
    for (const [seed, rate, maxRows] of cases) {
      const arrivals = draw(seed, rate, maxRows, N);
      const gaps = arrivals.map((a, i) => a.at - (i === 0 ? 0 : arrivals[i - 1]!.at));
      const mean = gaps.reduce((s, g) => s + g, 0) / N;
      const sd = Math.sqrt(gaps.reduce((s, g) => s + (g - mean) ** 2, 0) / (N - 1));
      const expected = 1000 / rate;
      // The sample mean's standard error is expected / sqrt(N) (0.7 %): within 5 of them.
      expect(Math.abs(mean - expected) / expected, `mean gap, seed ${seed}`).toBeLessThan(5 / Math.sqrt(N));
      expect(Math.abs(sd - expected) / expected, `gap sd, seed ${seed}`).toBeLessThan(0.05);
      const counts = new Array<number>(maxRows).fill(0);
      let outside = 0;
      for (const a of arrivals) {
        if (Number.isInteger(a.rows) && a.rows >= 1 && a.rows <= maxRows) counts[a.rows - 1]!++;
        else outside++;
      }
      expect(outside).toBe(0);
      // Each row count's share within 5 standard errors of 1 / maxRows.
      const p = 1 / maxRows;
      const se = Math.sqrt((p * (1 - p)) / N);
      for (const c of counts) expect(Math.abs(c / N - p), `rows, seed ${seed}`).toBeLessThanOrEqual(5 * se);
    }
  });
});
