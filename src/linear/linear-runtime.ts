import { types } from 'node:util';
import { describeValue, InvalidArgumentError, TooLargeError } from '../errors.js';
import {
  type BackendName,
  type BackendPreference,
  DEFAULT_WORKSPACE_BYTES,
  MAX_FEATURES,
  MAX_ROWS,
  MAX_WORKSPACE_COUNT,
  type NativeStats,
  resolveDevice,
  seededFloats,
  selectBackend,
} from '../native/index.js';
import { lengthOf, requireFloat32Array, requireInteger, requireLength } from '../native/validate.js';
import { builtModuleUrl } from '../paths.js';
import { checkRuntimeOptions, type RunOptions, type RuntimeOptions } from '../runtime/options.js';
import { type CloseOptions, type CloseResult, kEndedEarly, Runtime, type RuntimeReport } from '../runtime.js';
import type { LinearWeights, NativeWorkerData, NativeWorkerInput } from './protocol.js';

/** The runtime's own options, each of which LinearRuntime.start passes on (required here). */
type PassedOption = Exclude<keyof RuntimeOptions, 'worker' | 'workerData'>;

export interface LinearRuntimeOptions extends Omit<RuntimeOptions, 'worker' | 'workerData'> {
  /** 'fixture' (CPU), 'cuda', or 'auto' (CUDA when a device opens); default OMNI_BACKEND, else auto. */
  readonly backend?: BackendPreference | undefined;
  /** CUDA device; default OMNI_CUDA_DEVICE, else 0. */
  readonly device?: number | undefined;
  /**
   * Native libraries to load instead of this package's native/build ones, e.g. a CUDA library
   * built for your GPUs (relative paths from the working directory). Each must be the backend
   * it is given for; 'auto' probes the `cuda` one.
   */
  readonly libraries?: NativeLibraryPaths | undefined;
  /** The layer's weights. Without them, seeded random weights of the given shape are used. */
  readonly weights?: LinearWeights | undefined;
  /** The layer's shape without `weights` (default 256 -> 256); with them, it must agree. */
  readonly inFeatures?: number | undefined;
  readonly outFeatures?: number | undefined;
  /** Seed of the random weights (an integer in 0..2^32-1; default 1). */
  readonly seed?: number | undefined;
  /** Per-context workspace cache bounds (defaults 4 and 512 MiB). */
  readonly workspaceCount?: number | undefined;
  readonly workspaceBytes?: number | undefined;
  /** Test hook: allows `inject` calls (fixture backend only). */
  readonly faultInjection?: boolean | undefined;
}

export interface NativeLibraryPaths {
  readonly fixture?: string | undefined;
  readonly cuda?: string | undefined;
}

export interface LinearRunOptions extends RunOptions {
  /** Rows in x (default x.length / inFeatures). Cost defaults to rows. */
  readonly rows?: number | undefined;
}

/**
 * Seeded weights, scaled so outputs stay in GELU's interesting range. The shape (1..MAX_FEATURES
 * each) and the seed (0..2^32-1) are checked before anything is allocated.
 */
export function seededWeights(inFeatures: number, outFeatures: number, seed = 1): LinearWeights {
  checkFeatures('inFeatures', inFeatures);
  checkFeatures('outFeatures', outFeatures);
  requireInteger('seed', seed, 0, 2 ** 32 - 1);
  const scale = 1 / Math.sqrt(inFeatures);
  return {
    w: seededFloats(seed, inFeatures * outFeatures, scale),
    b: seededFloats(seed + 1, outFeatures, 0.1),
    inFeatures,
    outFeatures,
  };
}

/**
 * A Runtime running the built-in native worker: a fused linear layer, y = GELU(x W^T + b), on
 * the CPU fixture or CUDA. The backend is chosen once on the main thread (so it can say which
 * it chose) and every worker thread opens its own context on it.
 */
export class LinearRuntime {
  readonly runtime: Runtime;
  readonly backend: BackendName;
  /** Why this backend: requested, from OMNI_BACKEND, or what auto found. */
  readonly backendReason: string;
  /** Absolute path of the native library every thread loaded (null around another worker). */
  readonly libraryPath: string | null;
  readonly inFeatures: number;
  readonly outFeatures: number;
  /**
   * The most rows one call takes: MAX_ROWS, or fewer when the workspace byte limit cannot hold
   * that many (each row needs 8 x (inFeatures + outFeatures) bytes of scratch).
   */
  readonly maxRows: number;

  constructor(
    runtime: Runtime,
    shape: {
      inFeatures: number;
      outFeatures: number;
      backend: BackendName;
      reason?: string;
      libraryPath?: string;
      maxRows?: number;
    },
  ) {
    this.runtime = runtime;
    this.libraryPath = shape.libraryPath ?? null;
    this.inFeatures = shape.inFeatures;
    this.outFeatures = shape.outFeatures;
    this.maxRows = shape.maxRows ?? MAX_ROWS;
    this.backend = shape.backend;
    this.backendReason = shape.reason ?? 'given';
  }

  /** run()'s default deadline in milliseconds (the runtime's); undefined when there is none. */
  get deadlineMs(): number | undefined {
    return this.runtime.deadlineMs;
  }

  static async start(options: LinearRuntimeOptions = {}): Promise<LinearRuntime> {
    if (typeof options !== 'object' || options === null) {
      throw new InvalidArgumentError('LinearRuntime.start options must be an object');
    }
    const {
      backend: preference,
      device,
      libraries,
      weights: given,
      inFeatures,
      outFeatures,
      seed,
      workspaceCount,
      workspaceBytes,
      faultInjection,
      threads,
      admission,
      deadlineMs,
      idleTimeout,
      resourceLimits,
      startTimeoutMs,
    } = options;
    // Each named, not a rest spread: that would keep own properties only and silently drop
    // runtime options that come through a prototype (Runtime.start reads those). The type makes
    // an option added to RuntimeOptions a compile error here until it is passed on.
    const passed: { [K in PassedOption]: RuntimeOptions[K] } = {
      threads,
      admission,
      deadlineMs,
      idleTimeout,
      resourceLimits,
      startTimeoutMs,
    };
    const worker = builtModuleUrl('workers/native.js');
    // Every option is checked before any work: loading a library (for 'auto', opening a CUDA
    // context to probe it) and making seeded weights (up to 1 GiB). Runtime.start checks its
    // own options again.
    checkRuntimeOptions({ ...passed, worker });
    const checked = given === undefined ? undefined : checkWeights(given, inFeatures, outFeatures);
    const inF = checked?.inFeatures ?? checkFeatures('inFeatures', inFeatures ?? 256);
    const outF = checked?.outFeatures ?? checkFeatures('outFeatures', outFeatures ?? 256);
    // Even beside weights, where it is unused: a malformed seed is a mistake, not a no-op.
    if (seed !== undefined) requireInteger('seed', seed, 0, 2 ** 32 - 1);
    const maxRows = rowsPerCall(workspaceBytes, inF, outF);
    // What every thread's NativeContext.open checks again (for its direct users), checked here
    // first: a mistake is one coded error from start() before any thread starts, whichever backend
    // (the fixture has no devices, yet a malformed device or OMNI_CUDA_DEVICE is still a mistake).
    const resolvedDevice = resolveDevice(device);
    if (workspaceCount !== undefined) {
      requireInteger('workspaceCount', workspaceCount, 1, MAX_WORKSPACE_COUNT);
    }
    if (faultInjection !== undefined && typeof faultInjection !== 'boolean') {
      // The threads test it with === true: any other value would silently leave faults off.
      throw new InvalidArgumentError(
        `faultInjection must be a boolean, got ${describeValue(faultInjection)}`,
      );
    }
    const choice = selectBackend(preference, process.env, {
      device: resolvedDevice,
      ...checkLibraries(libraries),
    });
    const weights = sharedCopy(checked ?? seededWeights(inF, outF, seed));
    const data: NativeWorkerData = {
      backend: choice.backend,
      libraryPath: choice.library.path,
      device: resolvedDevice,
      weights,
      workspaceCount,
      workspaceBytes,
      faultInjection,
    };
    const runtime = await Runtime.start({ ...passed, worker, workerData: data });
    return new LinearRuntime(runtime, {
      ...weights,
      backend: choice.backend,
      reason: choice.reason,
      libraryPath: choice.library.path,
      maxRows,
    });
  }

  /**
   * Runs `rows` rows of x (row-major, inFeatures wide) and resolves with rows x outFeatures.
   * The cost defaults to rows. Checked before admission, so a mistake holds no capacity: more
   * rows than one native call takes (`maxRows`) is OMNI_ERR_TOO_LARGE (it can never be served),
   * any other malformed argument OMNI_ERR_INVALID_ARGUMENT.
   */
  run(x: Float32Array, options?: LinearRunOptions): Promise<Float32Array> {
    if (options !== undefined && (typeof options !== 'object' || options === null)) {
      return this.runtime[kEndedEarly]('invalid', new InvalidArgumentError('run options must be an object'));
    }
    if (!types.isFloat32Array(x))
      return this.runtime[kEndedEarly]('invalid', new InvalidArgumentError('x must be a Float32Array'));
    let givenRows: LinearRunOptions['rows'];
    let cost: LinearRunOptions['cost'];
    let signal: LinearRunOptions['signal'];
    let deadlineMs: LinearRunOptions['deadlineMs'];
    let transfer: LinearRunOptions['transfer'];
    try {
      // Each option read once, here, as Runtime.run reads them: inherited properties included
      // (a spread would keep only own ones and silently drop an inherited signal, deadline or
      // transfer list), and a getter that throws ends the call with its error, never run().
      // Into locals, not an object: this is every call's path.
      if (options != null) ({ rows: givenRows, cost, signal, deadlineMs, transfer } = options);
    } catch (err) {
      return this.runtime[kEndedEarly]('invalid', err);
    }
    const length = lengthOf(x);
    // Only undefined means "from x": a null rows is a mistake like a null cost, not the default.
    const rows = givenRows === undefined ? length / this.inFeatures : givenRows;
    if (!Number.isInteger(rows) || rows < 1) {
      return this.runtime[kEndedEarly](
        'invalid',
        new InvalidArgumentError(
          `x holds ${length} floats: not a whole number (>= 1) of ${this.inFeatures}-wide rows`,
        ),
      );
    }
    if (length !== rows * this.inFeatures) {
      // Found here, not by the native call after admission: a mistake holds no capacity.
      return this.runtime[kEndedEarly](
        'invalid',
        new InvalidArgumentError(`x holds ${length} floats, not rows (${rows}) x ${this.inFeatures}`),
      );
    }
    if (rows > this.maxRows) {
      // Like a cost above the unit ceiling: it can never fit, so it counts as a refusal.
      return this.runtime[kEndedEarly](
        'refused',
        new TooLargeError(rows, this.maxRows, `${rows} rows exceed the ${this.maxRows} one call takes`),
      );
    }
    const input: NativeWorkerInput = { x, rows };
    return this.runtime.run<Float32Array>(input, {
      cost: cost === undefined ? rows : cost,
      signal,
      deadlineMs,
      transfer,
    });
  }

  /**
   * The native context's counters from one worker thread. It is a call like any other: admitted
   * at cost 1 (so refused while the runtime is full) and counted in report().
   */
  stats(): Promise<NativeStats> {
    return this.runtime.run<NativeStats>({ stats: true } satisfies NativeWorkerInput);
  }

  report(): RuntimeReport {
    return this.runtime.report();
  }

  close(options?: CloseOptions): Promise<CloseResult> {
    return this.runtime.close(options);
  }
}

/**
 * Checked once here: a wrong shape is one coded error from start(), not a failure in every thread.
 * A shape also given in the options must agree: the weights would silently win, and rows would
 * then be cut at a width the caller did not ask for.
 */
function checkWeights(
  weights: LinearWeights,
  wantIn: number | undefined,
  wantOut: number | undefined,
): LinearWeights {
  if (typeof weights !== 'object' || weights === null) {
    throw new InvalidArgumentError('weights must be { w, b, inFeatures, outFeatures }');
  }
  const inFeatures = checkFeatures('weights.inFeatures', weights.inFeatures);
  const outFeatures = checkFeatures('weights.outFeatures', weights.outFeatures);
  if ((wantIn !== undefined && wantIn !== inFeatures) || (wantOut !== undefined && wantOut !== outFeatures)) {
    throw new InvalidArgumentError(
      `inFeatures/outFeatures (${wantIn ?? '-'} -> ${wantOut ?? '-'}) disagree with the weights' ${inFeatures} -> ${outFeatures}`,
    );
  }
  const w = requireFloat32Array('weights.w', weights.w);
  const b = requireFloat32Array('weights.b', weights.b);
  requireLength('weights.w', w, inFeatures * outFeatures);
  requireLength('weights.b', b, outFeatures);
  // The values checked, as a plain object: the threads get the weights by structured clone,
  // which keeps own data properties only (a class's getters would arrive as nothing), and a
  // getter read again could answer differently from what was checked.
  return { w, b, inFeatures, outFeatures };
}

/**
 * The threads' weights, copied once at start into one SharedArrayBuffer. piscina clones
 * workerData again for every thread it starts, a replacement for a lost one included: the
 * caller's own arrays, reused or detached (transferred) since, would reach it as they are then
 * (a detached one fails that clone, uncaught, in the main thread). Shared, every thread's clone
 * is this one copy, not a copy each holds for as long as it lives.
 */
function sharedCopy({ w, b, inFeatures, outFeatures }: LinearWeights): LinearWeights {
  const wLength = inFeatures * outFeatures;
  const memory = new SharedArrayBuffer((wLength + outFeatures) * Float32Array.BYTES_PER_ELEMENT);
  const sharedW = new Float32Array(memory, 0, wLength);
  const sharedB = new Float32Array(memory, wLength * Float32Array.BYTES_PER_ELEMENT, outFeatures);
  sharedW.set(w);
  sharedB.set(b);
  return { w: sharedW, b: sharedB, inFeatures, outFeatures };
}

function checkLibraries(libraries: NativeLibraryPaths | undefined): {
  fixturePath?: string;
  cudaPath?: string;
} {
  if (libraries === undefined) return {};
  if (typeof libraries !== 'object' || libraries === null) {
    throw new InvalidArgumentError('libraries must be { fixture?, cuda? } (paths)');
  }
  // Own keys are checked for a misspelt backend; the paths themselves are read like every
  // other option, inherited ones included (Object.entries alone would skip those silently).
  for (const backend of Object.keys(libraries)) {
    if (backend !== 'fixture' && backend !== 'cuda') {
      throw new InvalidArgumentError(
        `libraries has no backend ${JSON.stringify(backend)} (want fixture or cuda)`,
      );
    }
  }
  const paths: { fixturePath?: string; cudaPath?: string } = {};
  for (const backend of ['fixture', 'cuda'] as const) {
    const path: unknown = libraries[backend];
    if (path === undefined) continue;
    if (typeof path !== 'string' || path === '') {
      throw new InvalidArgumentError(
        `libraries.${backend} must be a non-empty path, got ${JSON.stringify(path)}`,
      );
    }
    paths[backend === 'fixture' ? 'fixturePath' : 'cudaPath'] = path;
  }
  return paths;
}

/**
 * The most rows one native call can take: the C side refuses a call whose scratch (input and
 * output rows, each staged twice) exceeds the workspace byte limit, on every attempt. Checked at
 * start so that such a call is refused before admission instead of failing in a worker.
 */
export function rowsPerCall(
  workspaceBytes: number | undefined,
  inFeatures: number,
  outFeatures: number,
): number {
  const bytes =
    workspaceBytes === undefined
      ? DEFAULT_WORKSPACE_BYTES
      : requireInteger('workspaceBytes', workspaceBytes, 1, Number.MAX_SAFE_INTEGER);
  const perRow = 2 * (inFeatures + outFeatures) * Float32Array.BYTES_PER_ELEMENT;
  if (bytes < perRow) {
    throw new InvalidArgumentError(
      `workspaceBytes ${bytes} cannot hold one row of ${inFeatures} in + ${outFeatures} out (${perRow} bytes)`,
    );
  }
  return Math.min(MAX_ROWS, Math.floor(bytes / perRow));
}

function checkFeatures(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1 || value > MAX_FEATURES) {
    throw new InvalidArgumentError(
      `${name} must be an integer from 1 to ${MAX_FEATURES}, got ${describeValue(value)}`,
    );
  }
  return value;
}
