/**
 * Every status a library returns that is not OMNI_OK becomes a NativeError carrying it: also one
 * outside omni_status (a negative int through koffi's signed return), and also from omni_close,
 * whose failure the shipped libraries report only for a context that is not open. A stub library
 * stands in for one that returns them: neither fixture nor CUDA can be made to.
 */
import { describe, expect, it } from 'vitest';
import type { NativeLibrary } from '../src/native/index.js';
import { NativeContext, NativeStatus } from '../src/native/index.js';
import { check } from '../src/native/status.js';
import { thrown } from './fixtures/thrown.js';

/** A library whose omni_open opens a dummy handle and whose omni_close answers `closeStatus`. */
function stubLibrary(closeStatus: number): NativeLibrary {
  const raw = {
    omni_open: (_device: number, _options: unknown, out: [unknown]) => {
      out[0] = 1n;
      return NativeStatus.OK;
    },
    omni_close: () => closeStatus,
    omni_last_error: () => '',
  };
  return { raw } as unknown as NativeLibrary;
}

describe('native status mapping', () => {
  it.each([-1, 9, NativeStatus.FATAL])('status %i is a NativeError with that nativeCode', (status) => {
    const err = thrown(() => check(stubLibrary(0), status, null, 'omni_test'));
    expect(err.code).toBe('OMNI_ERR_NATIVE');
    expect(err.nativeCode).toBe(status);
    expect(err.fatal).toBe(status === NativeStatus.FATAL);
  });

  it('a close the library refuses throws its status, once; the context is closed all the same', () => {
    const ctx = NativeContext.open(stubLibrary(NativeStatus.DEVICE));
    const err = thrown(() => ctx.close());
    expect(err.code).toBe('OMNI_ERR_NATIVE');
    expect(err.nativeCode).toBe(NativeStatus.DEVICE);
    expect(ctx.closed).toBe(true);
    // Handed back once: a second close does not call the library again.
    expect(() => ctx.close()).not.toThrow();
  });
});
