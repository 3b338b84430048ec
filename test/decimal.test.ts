/** isDecimal: the one notation for numbers the command line's flags and the HTTP front accept. */
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { decimalValue, isDecimal, isWholeDecimal, positiveDecimal } from '../src/decimal.js';

describe('isDecimal', () => {
  it('takes decimal notation, signed, with a fraction or an exponent, around blanks as Number() does', () => {
    for (const text of ['5', '+5', '-5', '0.5', '.5', '5.', '1e3', '1E-3', '2.5e+2', ' 5 ', '\t7\n']) {
      expect(isDecimal(text), JSON.stringify(text)).toBe(true);
    }
  });

  it("refuses what Number() would also take: other bases, '' and blanks, Infinity", () => {
    for (const text of ['0x10', '0b11', '0o7', '', ' ', 'Infinity', '-Infinity', 'NaN']) {
      expect(isDecimal(text), JSON.stringify(text)).toBe(false);
    }
  });

  it('refuses what is not a number at all', () => {
    for (const text of ['.', '+', '1e', 'e5', '5..', '1.2.3', '--5', '5 5', '1_000']) {
      expect(isDecimal(text), JSON.stringify(text)).toBe(false);
    }
  });
});

describe('isWholeDecimal', () => {
  it('takes a whole number however it is written', () => {
    for (const text of [
      '0',
      '-0',
      '+7',
      '7.',
      '7.000',
      '1e3',
      '2.5e1',
      '2.50E+1',
      '0.0e-400',
      '.5e1',
      ' 4 ',
      '9007199254740993',
    ]) {
      expect(isWholeDecimal(text), JSON.stringify(text)).toBe(true);
    }
  });

  it('refuses a fraction that Number() would round away, and what isDecimal refuses', () => {
    for (const text of [
      '1.0000000000000001',
      '1e-400',
      '4294967294.9999999999',
      '2.55e1',
      '.5',
      '1.5',
      // An exponent that puts the point before every digit (0.01): none of them is whole.
      '10e-3',
      '0x10',
      '',
      'Infinity',
    ]) {
      expect(isWholeDecimal(text), JSON.stringify(text)).toBe(false);
    }
  });
});

describe('positiveDecimal', () => {
  it('takes a number > 0 however small, which Number() may read as 0', () => {
    for (const text of [
      '5',
      '+5',
      ' 5 ',
      '.5',
      '5.',
      '1e-3',
      '1e-400',
      '0.0000001e-400',
      '1e400',
      '00.010',
    ]) {
      expect(positiveDecimal(text), JSON.stringify(text)).toBeGreaterThan(0);
    }
  });

  it('refuses 0 however written, a negative number, and what isDecimal refuses', () => {
    // '0E5': the exponent's letter in either case; ' -5': the sign read past leading blanks.
    for (const text of [
      '0',
      '-0',
      '+0',
      '0.0',
      '.0e5',
      '0E5',
      '0e-400',
      '-1e-400',
      '-5',
      ' -5',
      '0x10',
      '',
      'Infinity',
    ]) {
      expect(positiveDecimal(text), JSON.stringify(text)).toBeUndefined();
    }
  });

  it('reads a number > 0, one too small for a double as the least there is, one too large as Infinity', () => {
    expect(positiveDecimal(' 2.5e1 ')).toBe(25);
    expect(positiveDecimal('1e-400')).toBe(Number.MIN_VALUE);
    expect(positiveDecimal('1e400')).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('decimalValue', () => {
  it('reads text too small for a double on its own side of 0, never as the 0 Number() makes of it', () => {
    expect(decimalValue('1e-400')).toBe(Number.MIN_VALUE);
    expect(decimalValue('-1e-400')).toBe(-Number.MIN_VALUE);
    expect(decimalValue(' -2.5e1 ')).toBe(-25);
    expect(decimalValue('-1e400')).toBe(Number.NEGATIVE_INFINITY);
    // A zero however written, its sign too, is 0 (toBe tells it from -0).
    for (const text of ['0', '-0', '+0.0', '-0e-400', '.0e5', '0E-400', '-0E-400']) {
      expect(decimalValue(text), text).toBe(0);
    }
    for (const text of ['0x10', '1_000', '', ' ', 'NaN', 'Infinity', '5 5']) {
      expect(decimalValue(text), JSON.stringify(text)).toBeUndefined();
    }
  });

  it('tells the sign of text too small for a double by its digits, blanks around it as isDecimal takes them', () => {
    // Number() takes the blanks too; a sign read from the untrimmed text took ' -1e-400' for > 0.
    expect(decimalValue(' -1e-400')).toBe(-Number.MIN_VALUE);
    expect(decimalValue('\t-1e-400\n')).toBe(-Number.MIN_VALUE);
    expect(decimalValue(' 1e-400 ')).toBe(Number.MIN_VALUE);
  });
});

describe('long text', () => {
  // x-omni-deadline-ms reaches isDecimal with up to node's 16 KiB of header, a flag's value with
  // up to 128 KiB: an optional point between two runs of digits made the regex try every split of
  // a run that fails at its end, quadratic (16,000 digits and a letter: ~3 s of the server's event
  // loop; 100,000: minutes). Run under vm's timeout, which ends it where a test's timeout cannot
  // (a synchronous call runs to its end first): a bound thousands of times a linear scan's time.
  // A million digits, past any real input: ~5e11 backtracking steps for the quadratic reading,
  // minutes on any CPU; 100,000 (~5e9 steps, 29 s of CPU on a 2-vCPU VM) left a CPU a few times
  // faster within the bound, where the old regex would have passed.
  const bounded = (read: (text: string) => unknown, text: string): unknown =>
    runInNewContext('read(text)', { read, text }, { timeout: 10_000 });

  it('is read in one pass, refused or taken, whatever its length', () => {
    const digits = '1'.repeat(1_000_000);
    for (const text of [`${digits}x`, `${digits}.${digits}x`, `1e${digits}x`, `${digits}e`]) {
      expect(bounded(isDecimal, text), `${text.length} characters`).toBe(false);
      expect(bounded(decimalValue, text)).toBeUndefined();
    }
    expect(bounded(positiveDecimal, `${digits}.${digits}`)).toBe(Number.POSITIVE_INFINITY);
    expect(bounded(isWholeDecimal, `${digits}.${'0'.repeat(1_000_000)}e0`)).toBe(true);
  });
});
