/**
 * A bad value is described in its error without the description throwing: an object without a
 * prototype (no toString), a Symbol (a template literal throws for it), an object with
 * uncallable conversions, one whose inspection throws or a function whose conversion throws must
 * give the documented coded error, not a TypeError from building the message.
 */
import { describe, expect, it } from 'vitest';
import { describeValue, hasCode } from '../src/errors.js';
import { BoundedAdmission, LinearRuntime, Runtime } from '../src/index.js';
import { resolveDevice } from '../src/native/index.js';
import { requireInteger } from '../src/native/validate.js';
import { type Served, serve } from '../src/serve/index.js';
import { thrownCode } from './fixtures/thrown.js';

const hostile: Array<[string, () => unknown]> = [
  ['an object without a prototype', () => Object.create(null)],
  ['a symbol', () => Symbol('bad')],
  ['an object whose conversions are not callable', () => ({ toString: 1, valueOf: 1 })],
  // util.inspect runs URL's own custom inspection, which throws for an object that is no URL.
  ['an object whose inspection throws', () => Object.create(URL.prototype)],
  // Functions are described with String(), which calls their own Symbol.toPrimitive.
  [
    'a function whose conversion to a string throws',
    () =>
      Object.assign(() => 1, {
        [Symbol.toPrimitive]() {
          throw new Error('no string');
        },
      }),
  ],
];

/** The code a call gives, thrown or as a rejection; a call that throws synchronously while it
 * promised a rejection, or that succeeds, fails the test. */
async function rejectedCode(call: () => Promise<unknown>): Promise<unknown> {
  let pending: Promise<unknown>;
  try {
    pending = call();
  } catch (err) {
    throw new Error(`threw synchronously instead of rejecting: ${String((err as Error).message)}`);
  }
  return pending.then(
    () => {
      throw new Error('expected a rejection');
    },
    (err: { code?: unknown }) => err.code,
  );
}

describe.each(hostile)('%s as a number', (_what, make) => {
  it('BoundedAdmission bounds: OMNI_ERR_INVALID_BOUND', () => {
    expect(thrownCode(() => new BoundedAdmission({ requests: make() as number }))).toBe(
      'OMNI_ERR_INVALID_BOUND',
    );
    expect(thrownCode(() => new BoundedAdmission({ requests: 1, units: make() as number }))).toBe(
      'OMNI_ERR_INVALID_BOUND',
    );
  });

  it('admit timeoutMs: a rejection with OMNI_ERR_INVALID_ARGUMENT that changed nothing', async () => {
    const admission = new BoundedAdmission({ requests: 1, units: 10 });
    expect(await rejectedCode(() => admission.admit(1, { timeoutMs: make() as number }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0, rejected: 0 });
  });

  it('Runtime and LinearRuntime options: OMNI_ERR_INVALID_ARGUMENT', async () => {
    expect(await rejectedCode(() => Runtime.start({ worker: 'unused.js', threads: make() as number }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    expect(
      await rejectedCode(() => LinearRuntime.start({ backend: 'fixture', inFeatures: make() as number })),
    ).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it('native checks (device, integer arguments): OMNI_ERR_INVALID_ARGUMENT', () => {
    expect(thrownCode(() => resolveDevice(make() as number, {}))).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(thrownCode(() => requireInteger('rows', make(), 1, 8))).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it('serve options: OMNI_ERR_INVALID_ARGUMENT', async () => {
    const runtime = {} as Served;
    expect(await rejectedCode(() => serve(runtime, { port: make() as number }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    expect(await rejectedCode(() => serve(runtime, { drainTimeoutMs: make() as number }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
  });
});

describe('hasCode', () => {
  it('is false, never a throw, for a value whose code throws as it is read', () => {
    const getter = Object.defineProperty(new Error('x'), 'code', {
      get(): never {
        throw new Error('a code getter');
      },
    });
    const trap = new Proxy(
      {},
      {
        get(): never {
          throw new Error('a trap');
        },
      },
    );
    expect(hasCode(getter, 'OMNI_ERR_ABORTED')).toBe(false);
    expect(hasCode(trap, 'OMNI_ERR_ABORTED')).toBe(false);
    expect(hasCode({ code: 'OMNI_ERR_ABORTED' }, 'OMNI_ERR_ABORTED')).toBe(true);
  });
});

describe('describeValue', () => {
  it('quotes a string, so "1" given for a number is not described as the number 1', () => {
    // "device must be an integer in 0..1023, got 1" sent users looking for the wrong mistake.
    expect(describeValue('1')).toBe('"1"');
    expect(describeValue('')).toBe('""');
    expect(describeValue(1)).toBe('1');
    expect(describeValue(undefined)).toBe('undefined');
  });

  it('marks a BigInt as one, so 5n given for a number is not described as the number 5', () => {
    // "cost must be a non-negative safe integer, got 5" named the one value that was right.
    expect(describeValue(5n)).toBe('5n');
    expect(describeValue(-1n)).toBe('-1n');
  });
});
