/** bench/serve.bench.ts's 503 share (bench/lib/status-share.ts), rounded as the CLI's table is. */
import { describe, expect, it } from 'vitest';
import { statusShare } from '../bench/lib/status-share.js';
import { shareText } from '../src/cli/bench-report.js';

describe('statusShare', () => {
  it('rounds a half up, from the counts: 3 of 2000 (0.15 %) is 0.2 %, as 1 of 2000 (0.05 %) is 0.1 %', () => {
    expect(statusShare({ '200': { count: 1997 }, '503': { count: 3 } }, '503')).toBe('0.2%');
    expect(statusShare({ '200': { count: 1999 }, '503': { count: 1 } }, '503')).toBe('0.1%');
  });

  it('says what the CLI table says for the same counts, at every half and around it', () => {
    const differ: string[] = [];
    for (const whole of [8, 40, 400, 800, 2000, 4000]) {
      for (let part = 0; part <= whole; part++) {
        const bench = statusShare({ '200': { count: whole - part }, '503': { count: part } }, '503');
        const cli = `${shareText(part, whole)}%`;
        if (bench !== cli) differ.push(`${part}/${whole}: bench ${bench}, cli ${cli}`);
      }
    }
    expect(differ).toEqual([]);
  });

  it('counts every status heard, and a status not heard is 0 %; nothing heard is 0 %', () => {
    expect(statusShare({ '200': { count: 2 }, '413': { count: 1 }, '503': { count: 1 } }, '503')).toBe(
      '25.0%',
    );
    expect(statusShare({ '200': { count: 5 } }, '503')).toBe('0.0%');
    // A status the record names with no counts adds nothing.
    expect(statusShare({ '200': { count: 3 }, '404': undefined, '503': { count: 1 } }, '503')).toBe('25.0%');
    expect(statusShare({}, '503')).toBe('0.0%');
  });
});
