import { describeValue, InvalidBoundError, InvalidCostError } from '../errors.js';
import { checkOptionKeys, type KnownKeys, type OptionKeys } from '../option-keys.js';
import { MAX_REQUESTS_32, NARROW_FIELD_BITS, WIDE_FIELD_BITS } from './layout.js';

/**
 * A BoundedAdmission's bounds; a bound out of range throws OMNI_ERR_INVALID_BOUND, an unknown
 * key OMNI_ERR_INVALID_ARGUMENT. Together the two must pack into 62 bits (see
 * docs/limits.md).
 */
export interface AdmissionBounds {
  /** Outstanding requests allowed at once (>= 1, at most 2^29 - 1). */
  readonly requests: number;
  /**
   * Optional ceiling on outstanding units (the caller's cost unit: tokens, bytes, or 1), an
   * integer from 1 to 2^53 - 1. Without it, costs are checked but not bounded (request-only).
   */
  readonly units?: number | undefined;
}

export const BOUNDS_KEYS: OptionKeys<AdmissionBounds> = { requests: true, units: true };

/** Validated bounds; `unitShift` is the request field's position in the packed state word. */
export interface CheckedBounds {
  readonly requests: number;
  readonly units: number | undefined;
  readonly unitShift: number;
  /** The fields need the 64-bit (BigInt) state word. */
  readonly wide: boolean;
}

function bitLength(n: number): number {
  return n.toString(2).length;
}

function checkBound(name: string, value: unknown, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > max) {
    throw new InvalidBoundError(`${name} must be an integer from 1 to ${max}, got ${describeValue(value)}`);
  }
  return value;
}

/**
 * Throws OMNI_ERR_INVALID_BOUND where the configuration is written, never later; a key that is
 * no bound (`unit`) is OMNI_ERR_INVALID_ARGUMENT: the bound it meant was never given a value.
 * `keys` is the options type the bounds are part of (a runtime's admission has `wait` too);
 * `maxRequests` the caller's own limit (a runtime's claim slots), so the range a refusal names is
 * the one that will be taken.
 */
export function checkBounds(
  bounds: AdmissionBounds,
  keys: KnownKeys = BOUNDS_KEYS,
  maxRequests = MAX_REQUESTS_32,
): CheckedBounds {
  if (typeof bounds !== 'object' || bounds === null) {
    throw new InvalidBoundError(
      `bounds must be an object { requests, units? }, got ${describeValue(bounds)}`,
    );
  }
  checkOptionKeys('bounds', bounds, keys);
  // Each read once: a getter read again could answer otherwise than what was checked.
  const { requests: givenRequests, units: givenUnits } = bounds;
  const requests = checkBound('requests', givenRequests, maxRequests);
  if (givenUnits === undefined) return { requests, units: undefined, unitShift: 0, wide: false };
  const units = checkBound('units', givenUnits, Number.MAX_SAFE_INTEGER);
  // Both fields share one word below the flags: a pair that cannot be packed is refused here
  // rather than silently losing units later.
  const unitShift = bitLength(units);
  const bits = unitShift + bitLength(requests);
  if (bits > WIDE_FIELD_BITS) {
    throw new InvalidBoundError(
      `requests ${requests} and units ${units} need ${bits} bits; together they must fit in ${WIDE_FIELD_BITS}`,
    );
  }
  return { requests, units, unitShift, wide: bits > NARROW_FIELD_BITS };
}

/** A cost is a non-negative safe integer; anything else is a caller bug, reported as such. */
export function isValidCost(cost: unknown): cost is number {
  return Number.isSafeInteger(cost) && (cost as number) >= 0;
}

export function invalidCost(cost: unknown): InvalidCostError {
  return new InvalidCostError(`cost must be a non-negative safe integer, got ${describeValue(cost)}`);
}
