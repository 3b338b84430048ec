/** The bench's seeded randomness, in-process: per-phase streams and the generator's edges. */
import { describe, expect, it } from 'vitest';
import { ArrivalProcess, Prng, phaseSeed } from '../src/cli/prng.js';

/** The one seed whose first draw is exactly 0 (mulberry32's state 0 after its first step). */
const ZERO_FIRST = 2 ** 32 - 0x6d2b79f5;

describe('phaseSeed', () => {
  it('gives every phase of a run its own repeatable seed, and every run seed its own phases', () => {
    const seeds = new Set<number>();
    for (const run of [0, 1, 2, 7, 2 ** 32 - 1]) {
      for (const phase of [0, 1, 2, 3, 1000]) {
        const s = phaseSeed(run, phase);
        expect(s).toBe(phaseSeed(run, phase));
        expect(Number.isInteger(s) && s >= 0 && s < 2 ** 32).toBe(true);
        seeds.add(s);
      }
    }
    expect(seeds.size).toBe(25);
  });
});

describe('Prng', () => {
  it('draws in [0, 1), 0 included, and its exponential gaps stay finite', () => {
    expect(new Prng(ZERO_FIRST).next()).toBe(0);
    expect(Number.isFinite(new Prng(ZERO_FIRST).exponential(1))).toBe(true);
    const first = new ArrivalProcess(ZERO_FIRST, 1000, 16).next();
    expect(first.at).toBe(0);
    expect(first.rows).toBeGreaterThanOrEqual(1);
  });

  it('a rate too small to count per ms (--rates 1e-400) never arrives, even on a first draw of 0', () => {
    // perMs underflows to 0: 0 / 0 was a NaN arrival time, which no window's end check stops,
    // so the phase ran to its drain limit (60 s) and failed the run.
    for (const seed of [ZERO_FIRST, 1]) {
      expect(new ArrivalProcess(seed, Number.MIN_VALUE, 16).next().at).toBe(Number.POSITIVE_INFINITY);
    }
    expect(new Prng(ZERO_FIRST).exponential(0)).toBe(Number.POSITIVE_INFINITY);
  });

  it('takes every 32-bit seed as given: seeds differing in the top bit differ', () => {
    const draws = (seed: number): number[] => {
      const p = new Prng(seed);
      return Array.from({ length: 4 }, () => p.next());
    };
    expect(draws(2 ** 31 + 5)).not.toEqual(draws(5));
    expect(draws(2 ** 32 - 1)).toEqual(draws(2 ** 32 - 1));
  });
});
