/**
 * Argument checks done in TypeScript before a native call. koffi does no element-type check (an
 * Int32Array would be read as floats) and truncates numbers into integer parameters, so both are
 * caught here; the C side still checks every shape itself.
 */
import { types } from 'node:util';
import { describeValue, InvalidArgumentError } from '../errors.js';

/**
 * The built-in TypedArray length getter, which reads the view's own internal slot. A view's
 * `length` property can be shadowed (defineProperty, a subclass getter) and the C side trusts
 * the count it is given: a larger one would read and write past the view.
 */
const typedArrayLength = Object.getOwnPropertyDescriptor(
  Object.getPrototypeOf(Int8Array.prototype),
  'length',
)!.get as (this: ArrayBufferView) => number;

/** The element count C is told: always the view's real one. */
export function lengthOf(array: Float32Array): number {
  return typedArrayLength.call(array);
}

/** isFloat32Array (not instanceof): it also accepts arrays from another realm, and cannot be spoofed. */
export function requireFloat32Array(name: string, value: unknown): Float32Array {
  if (!types.isFloat32Array(value)) {
    throw new InvalidArgumentError(`${name} must be a Float32Array, got ${kindOf(value)}`);
  }
  return value;
}

/**
 * What kind of value was given where a Float32Array was wanted: a view's own type ('Float64Array'),
 * else its typeof; never its contents, which may be megabytes of floats.
 */
export function kindOf(value: unknown): string {
  // Never through the value's own properties: a view without a prototype has no constructor,
  // and one's own Symbol.toStringTag (which Object.prototype.toString reads) ran the caller's
  // getter, whose throw left run() uncoded.
  if (value === null) return 'null';
  if (!ArrayBuffer.isView(value)) return typeof value;
  return typedArrayName.call(value) ?? 'DataView';
}

/** The built-in TypedArray toStringTag getter: the view's own type, from its internal slot. */
const typedArrayName = Object.getOwnPropertyDescriptor(
  Object.getPrototypeOf(Int8Array.prototype),
  Symbol.toStringTag,
)!.get as (this: ArrayBufferView) => string | undefined;

/** An integer in [min, max]; rejects NaN, infinities, fractions and non-numbers. */
export function requireInteger(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(
      `${name} must be an integer in ${min}..${max}, got ${describeValue(value)}`,
    );
  }
  return value;
}

export function requireLength(name: string, array: Float32Array, expected: number): void {
  const length = lengthOf(array);
  if (length !== expected) {
    throw new InvalidArgumentError(`${name} has ${length} elements, expected ${expected}`);
  }
}
