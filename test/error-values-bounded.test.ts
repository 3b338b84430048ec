/**
 * The value an error message names ("..., got <value>") is described in bounded text, by no code
 * of the value's own. A string was quoted whole: a 10 MB one made a 10 MB message, and one whose
 * quoting passed V8's longest string threw an uncoded RangeError out of admit() instead of its
 * OMNI_ERR_INVALID_ARGUMENT. An object of many keys inspected to megabytes. A function was
 * described with String(), which ran its own Symbol.toPrimitive, or a Proxy's traps.
 */
import { describe, expect, it } from 'vitest';
import { describeValue } from '../src/errors.js';
import { BoundedAdmission, defineWorker } from '../src/index.js';
import { thrown } from './fixtures/thrown.js';

/** Far above any description, far below the values described. */
const BOUND = 10_000;

function manyKeys(count: number): Record<string, number> {
  const object: Record<string, number> = {};
  for (let i = 0; i < count; i++) object[`k${i}`] = i;
  return object;
}

describe('a large value named in an error', () => {
  it.each([
    ['a 10 MB string', () => defineWorker('x'.repeat(10_000_000) as never)],
    ['an object of 100,000 keys', () => defineWorker(manyKeys(100_000) as never)],
    [
      'a function of a 1 MB source',
      () => defineWorker(() => 1, new Function(`return ${JSON.stringify('q'.repeat(1_000_000))}`) as never),
    ],
  ])('%s: a coded error of a bounded message', (_, call) => {
    const error = thrown(call);
    expect(error.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(error.message.length).toBeLessThan(BOUND);
  });

  // Quoted, it is longer than V8's longest string (each '"' escapes to two characters).
  it('a 256 MiB string of quotes: admit() rejects OMNI_ERR_INVALID_ARGUMENT, no RangeError', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    let error: { code?: unknown } | undefined;
    try {
      await admission.admit(1, { signal: '"'.repeat(2 ** 28) as never });
    } catch (err) {
      error = err as { code?: unknown };
    }
    expect(error?.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
  });
});

describe('a function named in an error: none of its own code runs', () => {
  it('neither its Symbol.toPrimitive nor its toString', () => {
    let calls = 0;
    const fn = Object.assign(() => 1, {
      [Symbol.toPrimitive](): string {
        calls++;
        return 'converted';
      },
      toString(): string {
        calls++;
        return 'converted';
      },
    });
    expect(thrown(() => new BoundedAdmission(fn as never)).code).toBe('OMNI_ERR_INVALID_BOUND');
    describeValue(fn);
    expect(calls).toBe(0);
  });

  it("nor a Proxy's traps", () => {
    let traps = 0;
    const proxy = new Proxy(() => 1, {
      get(target, key, receiver): unknown {
        traps++;
        return Reflect.get(target, key, receiver);
      },
    });
    expect(thrown(() => new BoundedAdmission(proxy as never)).code).toBe('OMNI_ERR_INVALID_BOUND');
    expect(traps).toBe(0);
  });
});
