/** The admission bench's C floor row (bench/lib/native-atomic-floor.ts): built, loaded, and left out cleanly. */
import { afterEach, describe, expect, it } from 'vitest';
import { loadNativeAtomicPairs } from '../bench/lib/native-atomic-floor.js';

const savedCc = process.env.CC;
afterEach(() => {
  if (savedCc === undefined) delete process.env.CC;
  else process.env.CC = savedCc;
});

describe('loadNativeAtomicPairs', () => {
  it('builds the C pair loop, which admits and releases every pair under its bound and none at bound 0', () => {
    const loaded = loadNativeAtomicPairs();
    if (!('pairs' in loaded)) throw new Error(`not built: ${loaded.unavailable}`);
    expect(loaded.pairs(1000, 1 << 20)).toBe(1000);
    // Every pair released its room: a bound of one still admits each of the next ones.
    expect(loaded.pairs(500, 1)).toBe(500);
    expect(loaded.pairs(10, 0)).toBe(0);
  });

  it('says why the row is left out when the compiler cannot be run, rather than throwing', () => {
    process.env.CC = '/nonexistent/omni-cc';
    const loaded = loadNativeAtomicPairs();
    expect('unavailable' in loaded && loaded.unavailable).toMatch(/\/nonexistent\/omni-cc: .*ENOENT/);
  });

  it('takes an empty CC for the default compiler', () => {
    process.env.CC = '';
    expect('pairs' in loadNativeAtomicPairs()).toBe(true);
  });

  it('says so when the compiler fails', () => {
    process.env.CC = 'false';
    const loaded = loadNativeAtomicPairs();
    expect('unavailable' in loaded && loaded.unavailable).toMatch(/^false exited 1/);
  });
});
