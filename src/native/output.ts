/**
 * The output array a native call writes (up to 4 GiB: MAX_ROWS x MAX_FEATURES floats), made on
 * the host before the call. A host that cannot give it is OUT_OF_MEMORY, as C reports its own
 * allocations, not V8's uncoded RangeError.
 *
 * Throws: NativeError OUT_OF_MEMORY.
 */
import { NativeError } from '../errors.js';
import { NativeStatus } from './abi.js';

/**
 * A Float32Array over an ArrayBuffer of its own, as every output this package makes is, so its
 * buffer can be listed in a transfer: `Float32Array<ArrayBuffer>` where TypeScript's typed arrays
 * are generic (5.7+), whose plain Float32Array may be over a SharedArrayBuffer; before that, a
 * plain Float32Array. Written through slice(), which returns one, so that both versions read it.
 */
export type OwnFloat32Array = ReturnType<Float32Array['slice']>;

/** `fn` names the call in the message (a constant: this is every call's path). */
export function newOutput(fn: string, length: number): OwnFloat32Array {
  try {
    return new Float32Array(length);
  } catch (err) {
    throw new NativeError(
      NativeStatus.OUT_OF_MEMORY,
      `${fn}: cannot allocate the ${length * Float32Array.BYTES_PER_ELEMENT}-byte output (${(err as Error).message})`,
    );
  }
}
