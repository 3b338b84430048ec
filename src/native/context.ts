/**
 * NativeContext: one native context (a CUDA stream + resident weights + workspace cache, or the
 * fixture's model of them) owned by the thread that opened it.
 *
 * Invariants: a context is used by one thread at a time (each worker opens its own); after close()
 * every method but close() throws; typed arrays are passed to C without copies (SharedArrayBuffer
 * views included); a failed call leaks nothing: what it allocated is freed, or kept in the
 * workspace cache within its bounds (a workspace made for a call whose copy then failed stays
 * cached for the next call, and an eviction before a failed allocation stays evicted).
 * Memory ordering: calls are synchronous; when one returns, the output array is fully written. The
 * C side reads and writes the arrays with plain accesses, so another thread must not write a shared
 * input (or touch the output) while a call runs.
 * Abort safety: a native call cannot be interrupted; it runs to completion and only then can the
 * context be closed. close() synchronizes the stream before freeing, even after a fatal error.
 * Throws: InvalidArgumentError for a wrong array type, a non-integer or out-of-range size, or a
 * length that does not match the uploaded weights (checked here before the call); NativeError with
 * the C status for anything the library refuses, `fatal: true` once the context is poisoned. A call
 * whose rows need more scratch than workspaceBytes is NativeError WORKSPACE_LIMIT, as C reports it,
 * but found here before its output (up to 4 GiB) is allocated (so also on a poisoned context, whose
 * next call that fits reports FATAL); an output the host cannot allocate is OUT_OF_MEMORY.
 */
import { describeValue, InvalidArgumentError, NativeError } from '../errors.js';
import { checkOptionKeys, type OptionKeys } from '../option-keys.js';
import type { NativeStats } from './abi.js';
import { DEFAULT_WORKSPACE_BYTES, MAX_FEATURES, MAX_ROWS, MAX_WORKSPACE_COUNT, NativeStatus } from './abi.js';
import type { RawHandle } from './bindings.js';
import { resolveDevice } from './device.js';
import type { NativeLibrary } from './library.js';
import { newOutput, type OwnFloat32Array } from './output.js';
import { check } from './status.js';
import { lengthOf, requireFloat32Array, requireInteger, requireLength } from './validate.js';

/** Reaches the raw handle of an open context (null once closed): for the fault hooks and tests. */
export const kRawHandle: unique symbol = Symbol('omni.native.rawHandle');

/** NativeContext.open()'s options; an unknown key or a bad value: OMNI_ERR_INVALID_ARGUMENT. */
export interface NativeOpenOptions {
  /** Device index; defaults to OMNI_CUDA_DEVICE, then 0 (see resolveDevice). */
  device?: number | undefined;
  /** Cached workspaces (1..64, default 4); reuse and eviction rule in native/include/omni.h. */
  workspaceCount?: number | undefined;
  /** Bytes the cached workspaces may hold together (default 512 MiB). */
  workspaceBytes?: number | undefined;
  /** Environment consulted for OMNI_CUDA_DEVICE; defaults to process.env. */
  env?: NodeJS.ProcessEnv | undefined;
}

const OPEN_KEYS: OptionKeys<NativeOpenOptions> = {
  device: true,
  workspaceCount: true,
  workspaceBytes: true,
  env: true,
};

const EMPTY = new Float32Array(0);

/**
 * One native context on the calling thread, without worker threads: resident weights and a
 * workspace cache (a CUDA stream on 'cuda'). Calls are synchronous; use it from one thread at
 * a time, and close() it: nothing frees it for you.
 */
export class NativeContext {
  /** The library it was opened on. */
  readonly library: NativeLibrary;
  /** The device index it was opened on (resolved: option, OMNI_CUDA_DEVICE, else 0). */
  readonly device: number;
  #handle: RawHandle | null;
  #outFeatures = 0;
  #inFeatures = 0;
  /** Scratch bytes one row needs (device + pinned staging of x and y); 0 before uploadWeights. */
  #rowScratch = 0;
  /** The workspace byte limit C was given (its default when none was). */
  readonly #workspaceBytes: number;

  private constructor(library: NativeLibrary, handle: RawHandle, device: number, workspaceBytes: number) {
    this.library = library;
    this.#handle = handle;
    this.device = device;
    this.#workspaceBytes = workspaceBytes;
  }

  /**
   * Opens a context on a library from loadNativeLibrary or selectBackend. Throws
   * OMNI_ERR_INVALID_ARGUMENT for bad options, OMNI_ERR_NATIVE when the library cannot open one:
   * nativeCode NO_DEVICE, OUT_OF_MEMORY or DEVICE, or FATAL (`fatal: true`) on a CUDA device
   * whose context a sticky error has already poisoned in this process (none opens there again
   * until the process exits).
   */
  static open(library: NativeLibrary, options: NativeOpenOptions = {}): NativeContext {
    // Without this, anything but a loaded library is an uncoded TypeError at the call below.
    // Read once, and the function checked is the one called: read again, a getter could answer
    // a function to the check and anything else (or another function) to the call.
    const omniOpen = (library as Partial<NativeLibrary> | null)?.raw?.omni_open;
    if (typeof omniOpen !== 'function') {
      throw new InvalidArgumentError(
        `NativeContext.open needs a library from loadNativeLibrary or selectBackend, got ${describeValue(library)}`,
      );
    }
    // Checked like LinearRuntime.start's: null would throw an uncoded TypeError below, and a
    // primitive would silently open a context with every default.
    if (typeof options !== 'object' || options === null) {
      throw new InvalidArgumentError(
        `NativeContext.open options must be an object, got ${describeValue(options)}`,
      );
    }
    checkOptionKeys('NativeContext.open options', options, OPEN_KEYS);
    // undefined takes resolveDevice's default (process.env); null is refused there, not defaulted.
    const device = resolveDevice(options.device, options.env);
    // Each read once: a getter read again could answer undefined to the check and something else
    // to the call (koffi then threw an uncoded TypeError, or truncated it into C's integer).
    // Only undefined takes a default: null is checked, and refused, as LinearRuntime.start does
    // (it took 512 MiB here).
    const { workspaceCount, workspaceBytes } = options;
    const count =
      workspaceCount === undefined
        ? 0
        : requireInteger('workspaceCount', workspaceCount, 1, MAX_WORKSPACE_COUNT);
    // The limit is always passed, never C's default (0): the check linearGelu makes before
    // allocating its output must use the very limit C enforces, whatever the library was built with.
    const bytes =
      workspaceBytes === undefined
        ? DEFAULT_WORKSPACE_BYTES
        : requireInteger('workspaceBytes', workspaceBytes, 1, Number.MAX_SAFE_INTEGER);
    const out: [RawHandle | null] = [null];
    const status = omniOpen(device, { workspace_count: count, reserved: 0, workspace_bytes: bytes }, out);
    check(library, status, null, 'omni_open');
    return new NativeContext(library, out[0], device, bytes);
  }

  /** True once close() has run; every method but close() then throws. */
  get closed(): boolean {
    return this.#handle === null;
  }

  /** Shape of the uploaded weights; 0 before uploadWeights. */
  get outFeatures(): number {
    return this.#outFeatures;
  }

  /** Input width of the uploaded weights; 0 before uploadWeights. */
  get inFeatures(): number {
    return this.#inFeatures;
  }

  get [kRawHandle](): RawHandle | null {
    return this.#handle;
  }

  #live(fn: string): RawHandle {
    if (this.#handle === null) throw new InvalidArgumentError(`${fn}: the native context is closed`);
    return this.#handle;
  }

  /** Copies W (outFeatures x inFeatures, row-major) and b into the context; replaces earlier weights. */
  uploadWeights(w: Float32Array, b: Float32Array, outFeatures: number, inFeatures: number): void {
    const handle = this.#live('uploadWeights');
    requireFloat32Array('w', w);
    requireFloat32Array('b', b);
    requireInteger('outFeatures', outFeatures, 1, MAX_FEATURES);
    requireInteger('inFeatures', inFeatures, 1, MAX_FEATURES);
    requireLength('w', w, outFeatures * inFeatures);
    requireLength('b', b, outFeatures);
    const status = this.library.raw.omni_upload_weights(
      handle,
      w,
      lengthOf(w),
      b,
      lengthOf(b),
      outFeatures,
      inFeatures,
    );
    check(this.library, status, handle, 'omni_upload_weights');
    this.#outFeatures = outFeatures;
    this.#inFeatures = inFeatures;
    this.#rowScratch = 2 * (inFeatures + outFeatures) * Float32Array.BYTES_PER_ELEMENT;
  }

  /**
   * y = GELU(x W^T + b) for `rows` rows of x; writes into `out` when given and returns it, else
   * returns a new array over a buffer of its own (one a worker can move with ctx.transfer).
   */
  linearGelu(x: Float32Array, rows: number): OwnFloat32Array;
  // `out` required here, so that Out keeps the undefined of one that may be absent, and the result
  // is typed as either array: one `out?: Out` took out's type without it, and so named a new array
  // over an ArrayBuffer as one over the SharedArrayBuffer of the `out` that was not given.
  linearGelu<Out extends Float32Array | undefined>(
    x: Float32Array,
    rows: number,
    out: Out,
  ): Out extends Float32Array ? Out : OwnFloat32Array;
  linearGelu(x: Float32Array, rows: number, out?: Float32Array): Float32Array {
    const handle = this.#live('linearGelu');
    requireFloat32Array('x', x);
    requireInteger('rows', rows, 1, MAX_ROWS);
    if (out !== undefined) requireFloat32Array('out', out);
    let y = out ?? EMPTY;
    // Before any upload the shape is unknown; the C side reports OMNI_E_NOT_INITIALISED itself.
    if (this.#outFeatures > 0) {
      requireLength('x', x, rows * this.#inFeatures);
      if (out !== undefined) requireLength('out', out, rows * this.#outFeatures);
      // The C side's own refusal (kept there too), made before the output is allocated: it is the
      // same whatever is cached, since no cached workspace exceeds the limit. The limits bound the
      // product by 2^34, so it is exact.
      if (rows * this.#rowScratch > this.#workspaceBytes) throw this.#overLimit(rows);
      if (out === undefined) y = newOutput('linearGelu', rows * this.#outFeatures);
    }
    const status = this.library.raw.omni_linear_gelu(handle, x, lengthOf(x), rows, y, lengthOf(y));
    check(this.library, status, handle, 'omni_linear_gelu');
    // y is out, or (out undefined) the new output: the status check threw for EMPTY, which is
    // written only before any weights were uploaded.
    return y;
  }

  #overLimit(rows: number): NativeError {
    return new NativeError(
      NativeStatus.WORKSPACE_LIMIT,
      `linearGelu: ${rows} rows x (${this.#inFeatures} in + ${this.#outFeatures} out) need ${rows * this.#rowScratch} workspace bytes, over the limit ${this.#workspaceBytes}`,
    );
  }

  /**
   * The context's counters now (see NativeStats). Throws OMNI_ERR_NATIVE on a fatal context,
   * OMNI_ERR_INVALID_ARGUMENT once closed.
   */
  stats(): NativeStats {
    const handle = this.#live('stats');
    const s: Record<string, number | bigint> = {};
    check(this.library, this.library.raw.omni_stats(handle, s), handle, 'omni_stats');
    // uint64 fields arrive as BigInt only above 2^53, far beyond any real byte count.
    const n = (key: string): number => Number(s[key] ?? 0);
    return {
      liveBytes: n('live_bytes'),
      peakBytes: n('peak_bytes'),
      allocations: n('allocations'),
      streamSyncs: n('stream_syncs'),
      cachedWorkspaces: n('cached_workspaces'),
      workspaceBytes: n('workspace_bytes'),
      workspaceEvictions: n('workspace_evictions'),
      calls: n('calls'),
    };
  }

  /** Synchronizes and frees everything, even after a fatal error. Idempotent. */
  close(): void {
    const handle = this.#handle;
    if (handle === null) return;
    this.#handle = null;
    const status = this.library.raw.omni_close(handle);
    if (status !== NativeStatus.OK) check(this.library, status, null, 'omni_close');
  }
}
