/**
 * The fixture's fault-injection hooks and naive reference, typed. Only the CPU fixture exports
 * them; asking for them on another backend is an InvalidArgumentError.
 *
 * Scope: failAllocAfter is per calling thread; failCopyAfter, failSyncAfter and injectFatal are
 * per context, so tests in parallel threads cannot trip each other's faults.
 */
import { InvalidArgumentError } from '../errors.js';
import { MAX_FEATURES, MAX_ROWS } from './abi.js';
import type { RawFixtureApi } from './bindings.js';
import type { NativeContext } from './context.js';
import { kRawHandle } from './context.js';
import type { NativeLibrary } from './library.js';
import { newOutput } from './output.js';
import { check } from './status.js';
import { lengthOf, requireFloat32Array, requireInteger, requireLength } from './validate.js';

export class FixtureFaults {
  readonly library: NativeLibrary;
  readonly #raw: RawFixtureApi;

  constructor(library: NativeLibrary) {
    if (library.fixture === null) {
      throw new InvalidArgumentError(`fault hooks exist only in the fixture, not in ${library.backendName}`);
    }
    this.library = library;
    this.#raw = library.fixture;
  }

  /** The nth allocation this thread makes from now on fails (1 = the next); 0 disarms. */
  failAllocAfter(n: number): void {
    this.#raw.omni_fixture_fail_alloc_after(requireInteger('n', n, 0, 0xffff_ffff));
  }

  /**
   * The nth copy on ctx from now on (1 = the next; a call copies its input, then its output)
   * fails with COPY_FAILED, after synchronizing its stream; 0 disarms.
   */
  failCopyAfter(ctx: NativeContext, n = 1): void {
    this.#countDown(ctx, n, 'omni_fixture_fail_copy_after');
  }

  /**
   * The nth stream sync on ctx from now on (1 = the next) fails as a non-sticky CUDA sync error
   * does: nativeCode DEVICE, fatal: false, the context keeps serving; 0 disarms. An eviction's
   * sync frees nothing, an upload's keeps the old weights, a call's leaves its output unwritten;
   * a failed copy's own sync still reports COPY_FAILED.
   */
  failSyncAfter(ctx: NativeContext, n = 1): void {
    this.#countDown(ctx, n, 'omni_fixture_fail_sync_after');
  }

  /** Poisons ctx the way a sticky CUDA error does: every later call fails with fatal: true. */
  injectFatal(ctx: NativeContext): void {
    const handle = this.#handleOf(ctx);
    check(this.library, this.#raw.omni_fixture_inject_fatal(handle), handle, 'omni_fixture_inject_fatal');
  }

  /** Bytes all fixture contexts in this process hold now, half-built ones included. */
  liveBytes(): number {
    return Number(this.#raw.omni_fixture_live_bytes());
  }

  /**
   * The plain triple loop in C (no blocking, no context): numerical and speed baseline. A length
   * that does not match the shape is OMNI_ERR_INVALID_ARGUMENT; an `out` sharing bytes with x, w
   * or b is refused by C (OMNI_ERR_NATIVE, nativeCode INVALID_ARGUMENT), whichever views reach
   * that memory; an output the host cannot allocate is nativeCode OUT_OF_MEMORY, as in linearGelu.
   */
  referenceLinearGelu(
    x: Float32Array,
    rows: number,
    w: Float32Array,
    b: Float32Array,
    outFeatures: number,
    inFeatures: number,
    out?: Float32Array,
  ): Float32Array {
    requireFloat32Array('x', x);
    requireFloat32Array('w', w);
    requireFloat32Array('b', b);
    requireInteger('rows', rows, 1, MAX_ROWS);
    requireInteger('outFeatures', outFeatures, 1, MAX_FEATURES);
    requireInteger('inFeatures', inFeatures, 1, MAX_FEATURES);
    // Lengths before the output is allocated (up to 4 GiB), as NativeContext checks them; C
    // checks them again, and alone checks overlap.
    requireLength('x', x, rows * inFeatures);
    requireLength('w', w, outFeatures * inFeatures);
    requireLength('b', b, outFeatures);
    if (out !== undefined) requireLength('out', requireFloat32Array('out', out), rows * outFeatures);
    const y = out ?? newOutput('referenceLinearGelu', rows * outFeatures);
    const status = this.#raw.omni_fixture_reference_linear_gelu(
      x,
      lengthOf(x),
      rows,
      w,
      lengthOf(w),
      b,
      lengthOf(b),
      outFeatures,
      inFeatures,
      y,
      lengthOf(y),
    );
    check(this.library, status, null, 'omni_fixture_reference_linear_gelu');
    return y;
  }

  /** Arms one of ctx's fault countdowns: the nth such step on it from now on fails. */
  #countDown(
    ctx: NativeContext,
    n: number,
    hook: 'omni_fixture_fail_copy_after' | 'omni_fixture_fail_sync_after',
  ): void {
    const handle = this.#handleOf(ctx);
    const nth = requireInteger('n', n, 0, 0xffff_ffff);
    check(this.library, this.#raw[hook](handle, nth), handle, hook);
  }

  #handleOf(ctx: NativeContext): unknown {
    if (ctx.library !== this.library)
      throw new InvalidArgumentError('the context belongs to another library');
    const handle = ctx[kRawHandle];
    if (handle === null) throw new InvalidArgumentError('the native context is closed');
    return handle;
  }
}
