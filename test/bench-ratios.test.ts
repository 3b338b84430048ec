/**
 * The microbenchmark tables (bench/lib/ratios.ts formatRatios): each ratio is printed beside
 * its target's verdict, and the two must agree: a ratio just under its target (0.6996 against
 * 0.7) showed as "0.70x" beside "NOT met".
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BenchRow, formatRatios } from '../bench/lib/ratios.js';

function row(nsPerOp: number, ratio: number | undefined, target: number | undefined): BenchRow {
  return {
    name: 'case',
    nsPerOp,
    baseline: ratio === undefined ? undefined : 'base',
    ratio,
    target,
    met: target === undefined || ratio === undefined ? undefined : ratio >= target,
  };
}

/** The cells of the table's one data row: name, ns/op, baseline, ratio, target. */
function cells(r: BenchRow): string[] {
  const line = formatRatios('t', [r])
    .split('\n')
    .filter((l) => l.startsWith('| '))
    .at(-1)!;
  return line
    .split('|')
    .slice(1, -1)
    .map((c) => c.trim());
}

describe('formatRatios (the microbenchmark tables)', () => {
  it('never prints a ratio that reads as meeting its target beside NOT met, or the reverse', () => {
    expect(cells(row(32, 0.6996, 0.7)).slice(3)).toEqual(['0.6996x', '>= 0.7x NOT met']);
    expect(cells(row(32, 0.7996, 0.8)).slice(3)).toEqual(['0.7996x', '>= 0.8x NOT met']);
    // Clear of the target, two decimals as always.
    expect(cells(row(32, 0.7116, 0.7)).slice(3)).toEqual(['0.71x', '>= 0.7x met']);
    expect(cells(row(32, 0.7, 0.7)).slice(3)).toEqual(['0.70x', '>= 0.7x met']);
    expect(cells(row(32, 0.66, 0.8)).slice(3)).toEqual(['0.66x', '>= 0.8x NOT met']);
    expect(cells(row(32, 12.02, undefined)).slice(3)).toEqual(['12.02x', '']);
  });

  it('prints a ratio whose value compares with the target as the verdict says, and is the ratio rounded', () => {
    const target = fc.constantFrom(0.7, 0.8, 0.95, 5);
    const ratio = target.chain((t) =>
      fc.tuple(fc.constant(t), fc.double({ min: t * 0.99, max: t * 1.01, noNaN: true })),
    );
    fc.assert(
      fc.property(ratio, ([t, r]) => {
        const [, , , shown, verdict] = cells(row(32, r, t));
        const printed = Number(shown!.replace(/x$/, ''));
        const decimals = shown!.replace(/x$/, '').split('.')[1]?.length ?? 0;
        expect(verdict).toBe(`>= ${t}x ${r >= t ? 'met' : 'NOT met'}`);
        expect(printed >= t).toBe(r >= t);
        expect(decimals).toBeGreaterThanOrEqual(2);
        expect(Math.abs(printed - r)).toBeLessThanOrEqual(0.5 * 10 ** -decimals + 1e-12);
      }),
      { numRuns: 3000 },
    );
  });

  it('names the case a ratio is against, and marks a case without one as a baseline', () => {
    expect(cells(row(32, undefined, undefined))).toEqual(['case', '32.0', '(baseline)', '', '']);
    expect(cells(row(32, 1.5, 1.2))).toEqual(['case', '32.0', 'base', '1.50x', '>= 1.2x met']);
  });

  it('shows ns/op in whole nanoseconds from 100 up, also where one decimal rounds up to 100', () => {
    expect(cells(row(99.96, undefined, undefined))[1]).toBe('100');
    expect(cells(row(99.94, undefined, undefined))[1]).toBe('99.9');
    expect(cells(row(410.4, undefined, undefined))[1]).toBe('410');
  });
});
