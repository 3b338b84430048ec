/** The medians every benchmark table prints (bench/lib/median.ts). */
import { describe, expect, it } from 'vitest';
import { median } from '../bench/lib/median.js';

describe('median', () => {
  it('is the middle value of an odd count, whatever the order', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([5])).toBe(5);
  });

  it('is the mean of the two middle values of an even count (two rounds: their mean, not the slower)', () => {
    expect(median([100, 200])).toBe(150);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('orders by value, not as text (9 sorts before 10)', () => {
    expect(median([10, 9, 1])).toBe(9);
    expect(median([100, 20, 3, 1000])).toBe(60);
  });

  it('leaves its input as it was', () => {
    const values = [3, 1, 2];
    median(values);
    expect(values).toEqual([3, 1, 2]);
  });

  it('refuses no values rather than answering undefined', () => {
    expect(() => median([])).toThrow(RangeError);
  });
});
