/**
 * Errors crossing a thread: every omni-runtime error comes back, after a structured clone, as
 * its own class with its code, message and plain fields, so a caller's `instanceof` and field
 * reads work on errors a worker threw.
 */
import { describe, expect, it } from 'vitest';
import * as omni from '../src/index.js';
import {
  AbiMismatchError,
  AbortError,
  BadBodyError,
  BadRequestError,
  BodyTooLargeError,
  ClaimsExhaustedError,
  ClosedError,
  DeadlineError,
  fromWire,
  InvalidArgumentError,
  InvalidBoundError,
  InvalidClaimError,
  InvalidCostError,
  LibraryNotFoundError,
  MethodNotAllowedError,
  NativeError,
  NotFoundError,
  NotImplementedError,
  OmniError,
  PermitMovedError,
  PermitReleasedError,
  RejectedError,
  TaskFailedError,
  TimeoutError,
  TooLargeError,
  toWire,
  UnavailableError,
  UnsupportedMediaTypeError,
  WorkerExitedError,
} from '../src/index.js';

const crossed = (err: unknown): Error => fromWire(structuredClone(toWire(err)));

const everyClass: Error[] = [
  new InvalidBoundError(),
  new InvalidCostError(),
  new InvalidArgumentError('x must be a Float32Array'),
  new PermitReleasedError(),
  new PermitMovedError(),
  new InvalidClaimError(),
  new ClaimsExhaustedError(),
  new TooLargeError(9, 8),
  new TimeoutError(),
  new ClosedError(),
  new RejectedError('units', { depth: 3, capacity: 4, rejected: 7 }),
  new AbortError(),
  new DeadlineError(),
  new TaskFailedError(),
  new WorkerExitedError(),
  new UnavailableError('draining'),
  new LibraryNotFoundError('/x/libomni_fixture.so'),
  new AbiMismatchError(1, 2),
  new NativeError(8, 'sticky', true),
  new BadBodyError(),
  new BodyTooLargeError(1024),
  new UnsupportedMediaTypeError(),
  new NotFoundError(),
  new MethodNotAllowedError(),
  new NotImplementedError(),
  new BadRequestError(),
];

describe('errors crossing a thread', () => {
  it('covers every error class the package exports', () => {
    const exported = (Object.values(omni) as unknown[]).filter(
      (v): v is ErrorConstructor => typeof v === 'function' && v.prototype instanceof Error,
    );
    expect(exported.length).toBe(everyClass.length + 1); // and OmniError, their base
    const covered = new Set(everyClass.map((e) => e.constructor));
    expect(
      exported.filter((c) => c !== (OmniError as unknown) && !covered.has(c)).map((c) => c.name),
    ).toEqual([]);
  });

  it.each(everyClass.map((e) => [e.name, e] as const))(
    '%s comes back as its class, with its fields',
    (_n, original) => {
      const rebuilt = crossed(original);
      expect(rebuilt).toBeInstanceOf(original.constructor);
      expect(rebuilt.name).toBe(original.name);
      expect(rebuilt.message).toBe(original.message);
      expect({ ...rebuilt }).toEqual({ ...original });
    },
  );

  it("a user's own coded error keeps its code, name and plain fields", () => {
    class QuotaError extends Error {
      readonly code = 'APP_QUOTA';
      readonly tenant = 't1';
      readonly remaining = 0;
      override name = 'QuotaError';
    }
    const rebuilt = crossed(new QuotaError('over quota'));
    expect(rebuilt).toBeInstanceOf(OmniError);
    expect(rebuilt).toMatchObject({ name: 'QuotaError', code: 'APP_QUOTA', tenant: 't1', remaining: 0 });
  });

  it("an error-like object's own enumerable stack stays where it was thrown, not among the fields", () => {
    const wire = toWire({ message: 'm', code: 'X_STACK', stack: 'at somewhere', retry: true });
    expect(wire.fields).toEqual({ retry: true });
  });

  it("a user's code named like an Object.prototype member is the user's own, not a class to rebuild", () => {
    for (const code of ['constructor', 'toString', '__proto__']) {
      const rebuilt = crossed(Object.assign(new Error('own code'), { code, fatal: true }));
      expect(rebuilt).toBeInstanceOf(OmniError);
      expect(rebuilt).toMatchObject({ code, message: 'own code', fatal: true });
    }
  });

  it("a user's coded error keeps fatal and nativeCode (fatal: true fails the runtime: the caller sees why)", () => {
    const rebuilt = crossed(
      Object.assign(new Error('device lost'), { code: 'X_DEVICE', fatal: true, nativeCode: 7 }),
    );
    expect(rebuilt).toMatchObject({ code: 'X_DEVICE', fatal: true, nativeCode: 7 });
  });

  it('a class of this package rebuilt from its code keeps fatal: true (it failed the runtime)', () => {
    // The runtime fails on any reply whose error says fatal: true; its failure and the caller's
    // error must still say so when the code is one of this package's own, not NativeError's.
    for (const original of [new TaskFailedError('device lost'), new UnavailableError('failed')]) {
      const rebuilt = crossed(Object.assign(original, { fatal: true }));
      expect(rebuilt).toBeInstanceOf(original.constructor);
      expect(rebuilt).toMatchObject({ code: original.code, fatal: true });
    }
    // NativeError's own fatal is its field, not an extra one.
    expect(crossed(new NativeError(8, 'sticky', false))).toMatchObject({ fatal: false, nativeCode: 8 });
  });

  it('a class of this package keeps the plain fields a worker added to it, as any other error does', () => {
    // They were dropped: only the class's own fields were rebuilt, though a user's own coded
    // error and an uncoded one keep theirs.
    const rebuilt = crossed(
      Object.assign(new TaskFailedError('fetch failed'), { step: 'fetch', attempt: 2 }),
    );
    expect(rebuilt).toBeInstanceOf(TaskFailedError);
    expect(rebuilt).toMatchObject({ code: 'OMNI_ERR_TASK_FAILED', step: 'fetch', attempt: 2 });
    // The class's own fields stay the class's, and nothing shadows what the class inherits.
    const refused = crossed(
      Object.assign(new RejectedError('units', { depth: 1, capacity: 2, rejected: 3 }), { toString: 'x' }),
    );
    expect(refused).toMatchObject({ reason: 'units', depth: 1, capacity: 2, rejected: 3 });
    expect(Object.hasOwn(refused, 'toString')).toBe(false);
  });

  it('an Error whose message or name is not a string keeps its code and fields, not only a description', () => {
    const odd = Object.assign(new Error('x'), { code: 'X_ODD', message: 42, name: 7, tenant: 't1' });
    expect(toWire(odd)).toEqual({ name: 'Error', message: '', code: 'X_ODD', fields: { tenant: 't1' } });
    expect(crossed(odd)).toMatchObject({ code: 'X_ODD', name: 'Error', message: '', tenant: 't1' });
  });

  it('a hand-made wire without its fields: numbers unknown (NaN, not a plausible 0), not fatal', () => {
    const tooLarge = fromWire({ name: 'TooLargeError', message: 'm', code: 'OMNI_ERR_TOO_LARGE' });
    expect(tooLarge).toBeInstanceOf(TooLargeError);
    expect(tooLarge).toMatchObject({ cost: Number.NaN, unitCapacity: Number.NaN });
    const native = fromWire({ name: 'NativeError', message: 'm', code: 'OMNI_ERR_NATIVE', nativeCode: 3 });
    expect(native).toMatchObject({ code: 'OMNI_ERR_NATIVE', nativeCode: 3, fatal: false });
  });

  it('an error without a code keeps its plain fields', () => {
    expect(crossed(Object.assign(new Error('not found'), { status: 404 }))).toMatchObject({
      code: 'OMNI_ERR_TASK_FAILED',
      status: 404,
    });
  });

  it('an error without a code, or a thrown non-error, is a TaskFailedError', () => {
    const plain = crossed(new RangeError('out of range'));
    expect(plain).toBeInstanceOf(TaskFailedError);
    expect(plain).toMatchObject({
      name: 'RangeError',
      message: 'out of range',
      code: 'OMNI_ERR_TASK_FAILED',
    });
    expect(crossed(Object.create(null))).toBeInstanceOf(TaskFailedError);
    // A plain Error's name says nothing: the class's own name stands.
    expect(crossed(new Error('plain'))).toMatchObject({ name: 'TaskFailedError', message: 'plain' });
  });

  it('UnavailableError keeps whichever state refused the call, not one state for all', () => {
    for (const state of ['starting', 'draining', 'stopped', 'failed']) {
      expect(crossed(new UnavailableError(state))).toMatchObject({ code: 'OMNI_ERR_UNAVAILABLE', state });
    }
  });
});

describe('fromWire of something that is no WireError', () => {
  // null threw "Cannot read properties of null"; 5 passed for a TaskFailedError of no message.
  it.each([
    ['null', null],
    ['undefined', undefined],
    ['5', 5],
    ["'OMNI_ERR_REJECTED'", 'OMNI_ERR_REJECTED'],
    ['a Symbol message', { name: 'Error', message: Symbol('m') }],
    ['a number message', { name: 'Error', message: 5, code: 'OMNI_ERR_TIMEOUT' }],
    ['a Symbol code', { name: 'Error', message: 'm', code: Symbol('c') }],
  ])('%s: OMNI_ERR_INVALID_ARGUMENT, never a TypeError', (_name, wire) => {
    let code: unknown;
    try {
      fromWire(wire as unknown as Parameters<typeof fromWire>[0]);
    } catch (err) {
      code = (err as { code?: unknown }).code;
    }
    expect(code).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });
});
