import { randomInt } from 'node:crypto';
import { isSharedArrayBuffer } from 'node:util/types';
import { InvalidArgumentError, InvalidBoundError } from '../errors.js';
import { type CheckedBounds, checkBounds } from './bounds.js';
import {
  bufferBytes,
  ID_I32,
  MAX_CLAIM_SLOTS,
  REQUESTS_I32,
  SHIFT_I32,
  SLOTS_I32,
  UNIT_CEILING_F64,
} from './layout.js';

/**
 * Making an admission's SharedArrayBuffer, and recognising one handed to attach(): the header
 * carries the configuration, so an attaching thread rebuilds the same bounds from the buffer
 * alone.
 */
export function createAdmissionBuffer(bounds: CheckedBounds, slots: number): SharedArrayBuffer {
  const buffer = new SharedArrayBuffer(bufferBytes(slots));
  const i32 = new Int32Array(buffer, 0, 16);
  // Non-zero and random: claims of another admission (even in another process) never match.
  i32[ID_I32] = randomInt(1, 2 ** 31 - 1) | 0 || 1;
  i32[REQUESTS_I32] = bounds.requests;
  i32[SLOTS_I32] = slots;
  i32[SHIFT_I32] = bounds.unitShift;
  new Float64Array(buffer, 0, 8)[UNIT_CEILING_F64] = bounds.units ?? -1;
  return buffer;
}

/**
 * A SharedArrayBuffer's length by its internal slot: its own `byteLength` or its prototype (the
 * caller's to change) could throw, or pass a buffer too short for the claim table's views.
 */
const sharedBytes = Object.getOwnPropertyDescriptor(SharedArrayBuffer.prototype, 'byteLength')!.get as (
  this: SharedArrayBuffer,
) => number;

/** Every admission's id is non-zero, and its buffer holds all the claim slots it says it has. */
export function isAdmissionBuffer(buffer: unknown): buffer is SharedArrayBuffer {
  // Not instanceof: an object that only inherits SharedArrayBuffer.prototype throws an uncoded
  // TypeError when its byteLength is read.
  if (!isSharedArrayBuffer(buffer)) return false;
  const bytes = sharedBytes.call(buffer);
  if (bytes < bufferBytes(1)) return false;
  const i32 = new Int32Array(buffer, 0, 16);
  const slots = Atomics.load(i32, SLOTS_I32);
  return (
    Atomics.load(i32, ID_I32) !== 0 && slots >= 1 && slots <= MAX_CLAIM_SLOTS && bytes >= bufferBytes(slots)
  );
}

/**
 * The bounds an admission's buffer was made with, or undefined when its header holds none an
 * admission could have (check isAdmissionBuffer first): they must pass checkBounds and pack the
 * word as the header says (SHIFT), or this instance would read another layout than the others.
 */
export function headerBounds(buffer: SharedArrayBuffer): CheckedBounds | undefined {
  const i32 = new Int32Array(buffer, 0, 8);
  const ceiling = new Float64Array(buffer, 0, 8)[UNIT_CEILING_F64]!;
  let bounds: CheckedBounds;
  try {
    bounds = checkBounds({
      requests: Atomics.load(i32, REQUESTS_I32),
      units: ceiling < 0 ? undefined : ceiling,
    });
  } catch (err) {
    if (err instanceof InvalidBoundError) return undefined;
    throw err;
  }
  return bounds.unitShift === Atomics.load(i32, SHIFT_I32) ? bounds : undefined;
}

/** The bounds to attach with: throws OMNI_ERR_INVALID_ARGUMENT for a buffer no admission made. */
export function attachedBounds(buffer: SharedArrayBuffer): CheckedBounds {
  const bounds = isAdmissionBuffer(buffer) ? headerBounds(buffer) : undefined;
  if (bounds === undefined) {
    throw new InvalidArgumentError('attach() needs the whole SharedArrayBuffer of a BoundedAdmission');
  }
  return bounds;
}
