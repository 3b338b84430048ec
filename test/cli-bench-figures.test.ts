/**
 * The table's number format (bench-report figures()): three significant figures from 1 up,
 * whole numbers from 100 up, three decimals below 1. A value that rounds up into the next
 * decade must take that decade's format: 99.96 is "100", not the four figures of "100.0".
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { figures } from '../src/cli/bench-report.js';

/** x as written (its shortest decimal, String(x)) rounded half up to `places` decimals, digit by digit. */
function roundHalfUp(x: number, places: number): string {
  const [mantissa = '0', exponent = '0'] = String(x).split('e');
  const [whole = '0', fraction = ''] = mantissa.split('.');
  let digits = whole + fraction;
  // The decimal point sits after `point` digits.
  let point = whole.length + Number(exponent);
  if (point < 0) {
    digits = '0'.repeat(-point) + digits;
    point = 0;
  }
  digits = digits.padEnd(point + places + 1, '0');
  let kept = BigInt(digits.slice(0, point + places) || '0');
  if (digits[point + places]! >= '5') kept += 1n;
  const text = kept.toString().padStart(places + 1, '0');
  return places === 0 ? text : `${text.slice(0, -places)}.${text.slice(-places)}`;
}

/** The significant digits of a decimal text: its digits from the first non-zero one on. */
const significantDigits = (text: string): number => text.replace('.', '').replace(/^0+/, '').length;

/**
 * Three decimals below 1, else three significant figures, whole numbers from 100: by the rounded
 * value; above 0 and under 0.0005 (three decimals would show 0.000), three significant figures.
 */
function expected(x: number): string {
  if (x > 0 && Number(roundHalfUp(x, 3)) === 0) {
    // Zeros after the point before x's first significant digit, from x's decimal as written.
    const zeros = roundHalfUp(x, 400).split('.')[1]!.search(/[1-9]/);
    const text = roundHalfUp(x, zeros + 3);
    // A carry into the next decade (0.00009996 to 0.0001000) leaves one figure too many.
    return significantDigits(text) > 3 ? roundHalfUp(x, zeros + 2) : text;
  }
  for (const [places, below] of [
    [3, 1],
    [2, 10],
    [1, 100],
  ] as const) {
    const text = roundHalfUp(x, places);
    if (Number(text) < below) return text;
  }
  return roundHalfUp(x, 0);
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

  it("rounds results.json's figure half up, as written: 2.565 ms (2565 us) is 2.57, as 2.575 is 2.58", () => {
    // toFixed rounds the double, and the double nearest 2.565 lies below it: every tenth
    // latency between 1 and 10 ms (whole microseconds ending in 5) went down, the rest up.
    expect([figures(2.565), figures(2.575), figures(12.35), figures(12.25), figures(1.005)]).toEqual([
      '2.57',
      '2.58',
      '12.4',
      '12.3',
      '1.01',
    ]);
    expect([figures(0.0005), figures(1441.5), figures(8.345)]).toEqual(['0.001', '1442', '8.35']);
    // Never exponent notation, however large.
    expect(figures(1e21)).toBe('1000000000000000000000');
  });

  it('never shows a value above 0 as 0: under 0.0005 (a rate under one call in 2000 s) it keeps three figures', () => {
    expect([figures(0.0004), figures(0.00049994), figures(0.0000123456), figures(0.00009996)]).toEqual([
      '0.000400',
      '0.000500',
      '0.0000123',
      '0.000100',
    ]);
    // Halves up at the third figure, as the decimals above round (not to even: 0.000124).
    expect([figures(0.0001245), figures(0.0000004445)]).toEqual(['0.000125', '0.000000445']);
    // From 0.0005 three decimals show it; 0 is 0.
    expect([figures(0.0005), figures(0.00051), figures(0)]).toEqual(['0.001', '0.001', '0.000']);
  });

  it('agrees with a digit-by-digit rounding of the decimal, for any rate or latency', () => {
    const value = fc.oneof(
      fc.double({ min: 0, max: 1e7, noNaN: true }),
      // Whole microseconds as milliseconds, and counts over a window: halves are common.
      fc
        .oneof(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 0, max: 10_000_000 }))
        .map((us) => us / 1000),
      fc.tuple(fc.nat(100_000), fc.integer({ min: 1, max: 2000 })).map(([n, ms]) => n / (ms / 1000)),
      // Rates of a few calls over long phases, some under 0.0005/s.
      fc.tuple(fc.nat(10), fc.integer({ min: 1, max: 1_000_000 })).map(([n, s]) => n / s),
      fc.double({ min: 0, max: 0.001, noNaN: true }),
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
