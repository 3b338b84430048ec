import { types } from 'node:util';
import { InvalidArgumentError, TooLargeError } from '../errors.js';
import {
  type BackendName,
  type BackendPreference,
  MAX_FEATURES,
  MAX_ROWS,
  type NativeStats,
  resolveDevice,
  seededFloats,
  selectBackend,
} from '../native/index.js';
import { lengthOf, requireFloat32Array, requireLength } from '../native/validate.js';
import { builtModuleUrl } from '../paths.js';
import type { RunOptions, RuntimeOptions } from '../runtime/options.js';
import { type CloseOptions, type CloseResult, kEndedEarly, Runtime, type RuntimeReport } from '../runtime.js';
import type { LinearWeights, NativeWorkerData, NativeWorkerInput } from './protocol.js';

export interface LinearRuntimeOptions extends Omit<RuntimeOptions, 'worker' | 'workerData'> {
  /** 'fixture' (CPU), 'cuda', or 'auto' (CUDA when a device opens); default OMNI_BACKEND, else auto. */
  readonly backend?: BackendPreference;
  /** CUDA device; default OMNI_CUDA_DEVICE, else 0. */
  readonly device?: number;
  /**
   * Native libraries to load instead of this package's native/build ones, e.g. a CUDA library
   * built for your GPUs (relative paths from the working directory). Each must be the backend
   * it is given for; 'auto' probes the `cuda` one.
   */
  readonly libraries?: NativeLibraryPaths;
  /** The layer's weights. Without them, seeded random weights of the given shape are used. */
  readonly weights?: LinearWeights;
  readonly inFeatures?: number;
  readonly outFeatures?: number;
  readonly seed?: number;
  /** Per-context workspace cache bounds (defaults 4 and 512 MiB). */
  readonly workspaceCount?: number;
  readonly workspaceBytes?: number;
  /** Test hook: allows `inject` calls (fixture backend only). */
  readonly faultInjection?: boolean;
}

export interface NativeLibraryPaths {
  readonly fixture?: string | undefined;
  readonly cuda?: string | undefined;
}

export interface LinearRunOptions extends RunOptions {
  /** Rows in x (default x.length / inFeatures). Cost defaults to rows. */
  readonly rows?: number;
}

/** Seeded weights, scaled so outputs stay in GELU's interesting range. */
export function seededWeights(inFeatures: number, outFeatures: number, seed = 1): LinearWeights {
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

  constructor(
    runtime: Runtime,
    shape: {
      inFeatures: number;
      outFeatures: number;
      backend: BackendName;
      reason?: string;
      libraryPath?: string;
    },
  ) {
    this.runtime = runtime;
    this.libraryPath = shape.libraryPath ?? null;
    this.inFeatures = shape.inFeatures;
    this.outFeatures = shape.outFeatures;
    this.backend = shape.backend;
    this.backendReason = shape.reason ?? 'given';
  }

  /** run()'s default deadline in milliseconds (the runtime's); undefined when there is none. */
  get deadlineMs(): number | undefined {
    return this.runtime.deadlineMs;
  }

  static async start(options: LinearRuntimeOptions = {}): Promise<LinearRuntime> {
    const {
      backend: preference,
      device,
      libraries,
      weights: given,
      seed,
      workspaceCount,
      workspaceBytes,
      faultInjection,
      ...rest
    } = options;
    const weights =
      (given === undefined ? undefined : checkWeights(given)) ??
      seededWeights(
        checkFeatures('inFeatures', options.inFeatures ?? 256),
        checkFeatures('outFeatures', options.outFeatures ?? 256),
        seed,
      );
    const choice = selectBackend(preference, process.env, {
      ...(device === undefined ? {} : { device }),
      ...checkLibraries(libraries),
    });
    const data: NativeWorkerData = {
      backend: choice.backend,
      libraryPath: choice.library.path,
      device: choice.backend === 'cuda' ? resolveDevice(device) : device,
      weights,
      workspaceCount,
      workspaceBytes,
      faultInjection,
    };
    const runtime = await Runtime.start({
      ...rest,
      worker: builtModuleUrl('workers/native.js'),
      workerData: data,
    });
    return new LinearRuntime(runtime, {
      ...weights,
      backend: choice.backend,
      reason: choice.reason,
      libraryPath: choice.library.path,
    });
  }

  /**
   * Runs `rows` rows of x (row-major, inFeatures wide) and resolves with rows x outFeatures.
   * The cost defaults to rows. Checked before admission, so a mistake holds no capacity: more
   * rows than one native call takes is OMNI_ERR_TOO_LARGE (it can never be served), any other
   * malformed argument OMNI_ERR_INVALID_ARGUMENT.
   */
  run(x: Float32Array, options?: LinearRunOptions): Promise<Float32Array> {
    if (options !== undefined && (typeof options !== 'object' || options === null)) {
      return this.runtime[kEndedEarly]('invalid', new InvalidArgumentError('run options must be an object'));
    }
    if (!types.isFloat32Array(x))
      return this.runtime[kEndedEarly]('invalid', new InvalidArgumentError('x must be a Float32Array'));
    const length = lengthOf(x);
    const rows = options?.rows ?? length / this.inFeatures;
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
    if (rows > MAX_ROWS) {
      // Like a cost above the unit ceiling: it can never fit, so it counts as a refusal.
      return this.runtime[kEndedEarly](
        'refused',
        new TooLargeError(rows, MAX_ROWS, `${rows} rows exceed the ${MAX_ROWS} one call takes`),
      );
    }
    const input: NativeWorkerInput = { x, rows };
    const cost = options?.cost === undefined ? rows : options.cost;
    return this.runtime.run<Float32Array>(input, { ...options, cost });
  }

  /** The native context's counters from one worker thread. */
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

/** Checked once here: a wrong shape is one coded error from start(), not a failure in every thread. */
function checkWeights(weights: LinearWeights): LinearWeights {
  if (typeof weights !== 'object' || weights === null) {
    throw new InvalidArgumentError('weights must be { w, b, inFeatures, outFeatures }');
  }
  const inFeatures = checkFeatures('weights.inFeatures', weights.inFeatures);
  const outFeatures = checkFeatures('weights.outFeatures', weights.outFeatures);
  requireLength('weights.w', requireFloat32Array('weights.w', weights.w), inFeatures * outFeatures);
  requireLength('weights.b', requireFloat32Array('weights.b', weights.b), outFeatures);
  return weights;
}

function checkLibraries(libraries: NativeLibraryPaths | undefined): {
  fixturePath?: string;
  cudaPath?: string;
} {
  if (libraries === undefined) return {};
  if (typeof libraries !== 'object' || libraries === null) {
    throw new InvalidArgumentError('libraries must be { fixture?, cuda? } (paths)');
  }
  const paths: { fixturePath?: string; cudaPath?: string } = {};
  for (const [backend, path] of Object.entries(libraries)) {
    if (backend !== 'fixture' && backend !== 'cuda') {
      throw new InvalidArgumentError(
        `libraries has no backend ${JSON.stringify(backend)} (want fixture or cuda)`,
      );
    }
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

function checkFeatures(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1 || value > MAX_FEATURES) {
    throw new InvalidArgumentError(`${name} must be an integer from 1 to ${MAX_FEATURES}, got ${value}`);
  }
  return value;
}
