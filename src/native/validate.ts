/**
 * Argument checks done in TypeScript before a native call. koffi does no element-type check (an
 * Int32Array would be read as floats) and truncates numbers into integer parameters, so both are
 * caught here; the C side still checks every shape itself.
 */
import { InvalidArgumentError } from '../errors.js';

export function requireFloat32Array(name: string, value: unknown): Float32Array {
  if (!(value instanceof Float32Array)) {
    const got = value === null ? 'null' : ArrayBuffer.isView(value) ? value.constructor.name : typeof value;
    throw new InvalidArgumentError(`${name} must be a Float32Array, got ${got}`);
  }
  return value;
}

/** An integer in [min, max]; rejects NaN, infinities, fractions and non-numbers. */
export function requireInteger(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(`${name} must be an integer in ${min}..${max}, got ${String(value)}`);
  }
  return value;
}

export function requireLength(name: string, array: Float32Array, expected: number): void {
  if (array.length !== expected) {
    throw new InvalidArgumentError(`${name} has ${array.length} elements, expected ${expected}`);
  }
}
