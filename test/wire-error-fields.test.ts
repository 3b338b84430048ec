/**
 * What fromWire puts on the error it rebuilds, besides its class's own: the wire's fields, as
 * plain values, never over what the error has (own or inherited), whatever the code. A field
 * named code or toString, on an error of no package code, changed its code or made `${err}`
 * throw; a wire's fields that threw as they were read threw out of fromWire uncoded; a parsed
 * wire's `__proto__` became the error's prototype; a name that is no string made toString throw.
 */
import { describe, expect, it } from 'vitest';
import {
  fromWire,
  NativeError,
  OmniError,
  TaskFailedError,
  TooLargeError,
  toWire,
  type WireError,
} from '../src/index.js';

const crossed = (err: unknown): Error => fromWire(structuredClone(toWire(err)));

/** A wire as a caller may hand fromWire (a public function): anything at all in its fields. */
const wire = (fields: unknown, rest: Partial<WireError> = {}): WireError =>
  ({ name: 'Error', message: 'm', fields, ...rest }) as WireError;

/** The code of what fromWire throws, or of what it returns. */
function codeOf(make: () => Error): unknown {
  try {
    return (make() as { code?: unknown }).code;
  } catch (err) {
    return `threw ${(err as { code?: unknown }).code}`;
  }
}

describe("fromWire: the wire's fields never shadow the error's own", () => {
  it('a boolean field comes back; an object or a function field does not (toWire sends neither)', () => {
    const rebuilt = fromWire(wire({ retryable: true, nested: { a: 1 }, run: () => 1 }));
    expect(rebuilt).toMatchObject({ retryable: true });
    expect(Object.hasOwn(rebuilt, 'nested') || Object.hasOwn(rebuilt, 'run')).toBe(false);
  });

  it("a NativeError's fatal stays its own boolean: a wire's fatal that is not true is not copied over it", () => {
    const rebuilt = fromWire(wire({}, { code: 'OMNI_ERR_NATIVE', nativeCode: 3, fatal: 'yes' as never }));
    expect(rebuilt).toBeInstanceOf(NativeError);
    expect((rebuilt as NativeError).fatal).toBe(false);
  });

  it.each([
    ['a string', 'ab'],
    ['a number', 5],
  ])('fields that are %s carry nothing', (_, fields) => {
    // Object.keys of a string is its indices: '0' and '1' came back as the error's fields.
    const rebuilt = fromWire(wire(fields));
    expect(rebuilt).toBeInstanceOf(TaskFailedError);
    expect(Object.hasOwn(rebuilt, '0')).toBe(false);
  });

  it('a thrown error of no code, with a field named toString: String(err) still works', () => {
    const rebuilt = crossed(Object.assign(new Error('x'), { toString: 'oops', step: 'fetch' }));
    expect(rebuilt).toBeInstanceOf(TaskFailedError);
    expect(rebuilt).toMatchObject({ code: 'OMNI_ERR_TASK_FAILED', step: 'fetch' });
    expect(Object.hasOwn(rebuilt, 'toString')).toBe(false);
    expect(typeof String(rebuilt)).toBe('string');
  });

  it("a field named code does not change a user's code, or an uncoded error's", () => {
    const user = fromWire(wire({ code: 'OMNI_ERR_NATIVE' }, { code: 'X_USER' }));
    expect(user).toBeInstanceOf(OmniError);
    expect((user as OmniError).code).toBe('X_USER');
    expect((fromWire(wire({ code: 'OMNI_ERR_NATIVE' })) as OmniError).code).toBe('OMNI_ERR_TASK_FAILED');
  });

  it("a parsed wire's own __proto__ does not become the error's prototype", () => {
    const fields = JSON.parse('{"__proto__": {"polluted": true}, "step": "fetch"}') as unknown;
    const rebuilt = fromWire(wire(fields));
    expect(rebuilt).toBeInstanceOf(TaskFailedError);
    expect(rebuilt).toMatchObject({ step: 'fetch' });
    expect((rebuilt as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it('a name that is no string is not the rebuilt error name', () => {
    const rebuilt = fromWire(wire({}, { name: Symbol('n') as never, code: 'X_USER' }));
    expect(typeof rebuilt.name).toBe('string');
    expect(typeof String(rebuilt)).toBe('string');
  });
});

describe('fromWire: fields that throw as they are read', () => {
  const keysThrow = new Proxy(
    {},
    {
      ownKeys(): never {
        throw new Error('ownKeys');
      },
    },
  );
  const getterThrows = Object.defineProperty({ step: 'fetch' }, 'cost', {
    enumerable: true,
    get(): never {
      throw new Error('getter');
    },
  });

  it.each([
    ['a Proxy whose ownKeys throws', keysThrow, 'OMNI_ERR_TASK_FAILED'],
    ['a Proxy whose ownKeys throws, for a class', keysThrow, 'OMNI_ERR_TOO_LARGE'],
    ['a getter that throws', getterThrows, 'OMNI_ERR_TASK_FAILED'],
    ['a getter that throws, for a field the class reads', getterThrows, 'OMNI_ERR_TOO_LARGE'],
  ])('%s: the error of the code, not a throw', (_, fields, code) => {
    expect(codeOf(() => fromWire(wire(fields, { code })))).toBe(code);
  });

  it('the class reads what it can: a field it reads that threw is no number', () => {
    const rebuilt = fromWire(wire(getterThrows, { code: 'OMNI_ERR_TOO_LARGE' }));
    expect(rebuilt).toBeInstanceOf(TooLargeError);
    expect((rebuilt as TooLargeError).cost).toBeNaN();
    expect(rebuilt).toMatchObject({ step: 'fetch' });
  });
});

describe('fromWire: nativeCode and fatal of the types toWire sends, else as if absent', () => {
  const odd = { nativeCode: '7', fatal: 'yes' } as unknown as Partial<WireError>;

  it('a NativeError rebuilt from a string nativeCode has a number, not the string', () => {
    const rebuilt = fromWire(wire({}, { code: 'OMNI_ERR_NATIVE', ...odd }));
    expect(rebuilt).toBeInstanceOf(NativeError);
    expect(typeof (rebuilt as NativeError).nativeCode).toBe('number');
    expect(rebuilt).toMatchObject({ fatal: false });
  });

  it.each([
    ['an uncoded error', {}],
    ["a user's code", { code: 'X_OWN' }],
    ['a class without its own nativeCode', { code: 'OMNI_ERR_TIMEOUT' }],
  ])('%s carries neither', (_, rest) => {
    const rebuilt = fromWire(wire({}, { ...rest, ...odd }));
    expect(Object.hasOwn(rebuilt, 'nativeCode')).toBe(false);
    expect(Object.hasOwn(rebuilt, 'fatal')).toBe(false);
  });
});
