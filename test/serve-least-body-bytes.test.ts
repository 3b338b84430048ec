/**
 * leastBodyBytes (src/serve/body.ts): the fewest bytes a well-formed body of the hinted rows can
 * take. A chunked request whose hinted rows cannot fit the body limit is refused 413 from its
 * headers by it (serve-header-refusal.test.ts), so it must be exact: too high refuses a body that
 * fits, too low lets a client upload a body that cannot fit before hearing the same 413.
 */
import { describe, expect, it } from 'vitest';
import { leastBodyBytes } from '../src/serve/body.js';

/** The shortest JSON body of `rows` rows of `width` numbers: every number a single digit. */
function shortestJson(rows: number, width: number): string {
  return JSON.stringify({ rows: Array.from({ length: rows }, () => new Array(width).fill(0)) });
}

describe('leastBodyBytes', () => {
  it("is the shortest JSON body's length, for every row count and width", () => {
    for (const width of [1, 2, 4, 7]) {
      for (const rows of [1, 2, 3, 10]) {
        expect([width, rows, leastBodyBytes(rows, width, 'json')]).toEqual([
          width,
          rows,
          Buffer.byteLength(shortestJson(rows, width)),
        ]);
      }
    }
  });

  it('is exactly rows x width float32 values for octets', () => {
    expect(leastBodyBytes(3, 4, 'octet')).toBe(48);
    expect(leastBodyBytes(1, 1, 'octet')).toBe(4);
  });
});
