/**
 * The table's number format (bench-report figures()): three significant figures from 1 up,
 * whole numbers from 100 up, three decimals below 1. A value that rounds up into the next
 * decade must take that decade's format: 99.96 is "100", not the four figures of "100.0".
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { figures } from '../src/cli/bench-report.js';

/** The same rule through toPrecision, which picks its places from the rounded value. */
function expected(x: number): string {
  const decimals3 = x.toFixed(3);
  if (Number(decimals3) < 1) return decimals3;
  const three = x.toPrecision(3);
  return Number(three) >= 100 ? x.toFixed(0) : three;
}

describe('figures (the table and chart number format)', () => {
  it('shows a value that rounds into the next decade in that decade format', () => {
    expect([figures(99.96), figures(99.95), figures(9.996), figures(0.9996)]).toEqual([
      '100',
      '100',
      '10.0',
      '1.00',
    ]);
    // Just below a carry, and the ordinary cases, stay as they were.
    expect([figures(99.94), figures(9.994), figures(0.9994)]).toEqual(['99.9', '9.99', '0.999']);
    expect([figures(1441.2), figures(22.71), figures(2.567), figures(0.073)]).toEqual([
      '1441',
      '22.7',
      '2.57',
      '0.073',
    ]);
  });

  it('agrees with toPrecision(3) from 1 up and three decimals below, for any rate or latency', () => {
    const value = fc.oneof(
      fc.double({ min: 0, max: 1e7, noNaN: true }),
      // Around every decade edge, where rounding carries.
      fc
        .tuple(fc.constantFrom(1, 10, 100, 1000), fc.double({ min: -0.01, max: 0.01, noNaN: true }))
        .map(([edge, d]) => Math.max(0, edge * (1 + d))),
    );
    fc.assert(
      fc.property(value, (x) => {
        expect(figures(x)).toBe(expected(x));
      }),
      { numRuns: 5000 },
    );
  });
});
