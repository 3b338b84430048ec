/**
 * describeValue at its bound (MAX_DESCRIBED, 1000 characters: a string's quoted content, any
 * other description whole) and with a value that has its own inspect: never run.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { describeValue } from '../src/errors.js';

const MAX_DESCRIBED = 1000;

describe('describeValue at its bound', () => {
  it('a string of MAX_DESCRIBED characters is quoted whole; one longer is cut to that many', () => {
    const whole = 'a'.repeat(MAX_DESCRIBED);
    expect(describeValue(whole)).toBe(JSON.stringify(whole));
    expect(describeValue(`${whole}b`)).toBe(`${JSON.stringify(whole)}... (${MAX_DESCRIBED + 1} characters)`);
  });

  it('a description of MAX_DESCRIBED characters is whole; one longer is cut to that many', () => {
    // A BigInt is described as its digits and an n.
    const digits = (count: number): bigint => BigInt('9'.repeat(count));
    expect(describeValue(digits(MAX_DESCRIBED - 1))).toBe(`${'9'.repeat(MAX_DESCRIBED - 1)}n`);
    expect(describeValue(digits(MAX_DESCRIBED))).toBe(
      `${'9'.repeat(MAX_DESCRIBED)}... (${MAX_DESCRIBED + 1} characters)`,
    );
  });

  it("an object's own inspect is not run", () => {
    let ran = false;
    const value = {
      [inspect.custom]: () => {
        ran = true;
        return 'mine';
      },
    };
    expect(describeValue(value)).not.toContain('mine');
    expect(ran).toBe(false);
  });
});
