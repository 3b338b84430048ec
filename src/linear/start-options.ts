/**
 * LinearRuntime.start's options and their checks. Every option is checked before any work:
 * loading a library (for 'auto', opening a CUDA context to probe it), making seeded weights
 * (up to 1 GiB) and starting threads. A mistake is one coded error from start().
 *
 * Throws: InvalidArgumentError, or InvalidBoundError for the admission bounds (checkRuntimeOptions).
 */
import { describeValue, InvalidArgumentError } from '../errors.js';
import {
  type BackendPreference,
  DEFAULT_WORKSPACE_BYTES,
  MAX_ROWS,
  MAX_WORKSPACE_COUNT,
  resolveDevice,
  type SelectOptions,
} from '../native/index.js';
import { requireInteger } from '../native/validate.js';
import { checkOptionKeys, type OptionKeys } from '../option-keys.js';
import { builtModuleUrl } from '../paths.js';
import { checkRuntimeOptions, RUNTIME_KEYS, type RuntimeOptions } from '../runtime/options.js';
import type { LinearWeights } from './protocol.js';
import { checkFeatures, checkWeights } from './weights.js';

/**
 * The options LinearRuntime.start sets itself: its worker, that worker's data, and threadEnds,
 * which gives back the native contexts of threads that end without their close hook.
 */
type OwnOption = 'worker' | 'workerData' | 'threadEnds';

/** The runtime's own options, each of which LinearRuntime.start passes on (required here). */
type PassedOption = Exclude<keyof RuntimeOptions, OwnOption>;

/**
 * LinearRuntime.start()'s options: Runtime.start()'s but those it sets itself (worker,
 * workerData, threadEnds), plus the layer's. All checked before a library loads or a thread
 * starts; a mistake is OMNI_ERR_INVALID_ARGUMENT (a bound's, OMNI_ERR_INVALID_BOUND).
 */
export interface LinearRuntimeOptions extends Omit<RuntimeOptions, OwnOption> {
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
  /**
   * Input width without `weights` (1 to MAX_FEATURES, default 256); with them, it must agree.
   */
  readonly inFeatures?: number | undefined;
  /**
   * Output width without `weights` (1 to MAX_FEATURES, default 256); with them, it must agree.
   */
  readonly outFeatures?: number | undefined;
  /** Seed of the random weights (an integer in 0..2^32-1; default 1). */
  readonly seed?: number | undefined;
  /** Workspaces each thread's native context caches, an integer from 1 to 64 (default 4). */
  readonly workspaceCount?: number | undefined;
  /**
   * Each context's workspace byte limit (default 512 MiB). It caps `maxRows`: each row needs
   * 8 x (inFeatures + outFeatures) bytes, and a limit below one row is refused.
   */
  readonly workspaceBytes?: number | undefined;
  /**
   * Test hook (fixture backend only): allows `runtime.run({ inject, after? })`, which arms a
   * fixture fault ('fatal', 'copy', 'alloc' or 'sync') on the context of the thread it runs on.
   */
  readonly faultInjection?: boolean | undefined;
}

// The runtime's keys but those start() sets itself: passed on, so checked here first.
const { worker: _worker, workerData: _workerData, threadEnds: _threadEnds, ...PASSED_KEYS } = RUNTIME_KEYS;

export const LINEAR_KEYS: OptionKeys<LinearRuntimeOptions> = {
  ...PASSED_KEYS,
  backend: true,
  device: true,
  libraries: true,
  weights: true,
  inFeatures: true,
  outFeatures: true,
  seed: true,
  workspaceCount: true,
  workspaceBytes: true,
  faultInjection: true,
};

/** LinearRuntimeOptions.libraries: a non-empty path per backend, else the built-in library. */
export interface NativeLibraryPaths {
  /** The CPU fixture library (libomni_fixture.so) to load. */
  readonly fixture?: string | undefined;
  /** The CUDA library (libomni_cuda.so) to load, and the one 'auto' probes. */
  readonly cuda?: string | undefined;
}

const LIBRARY_KEYS: OptionKeys<NativeLibraryPaths> = { fixture: true, cuda: true };

/** LinearRuntimeOptions, checked: what start() needs to choose a backend and start threads. */
export interface CheckedLinearOptions {
  /** The runtime's options, for Runtime.start (which checks them again). */
  readonly runtime: { [K in PassedOption]: RuntimeOptions[K] };
  readonly worker: string;
  readonly preference: BackendPreference | undefined;
  /** selectBackend's options: the resolved device and the libraries given. */
  readonly selection: SelectOptions & { device: number };
  /** The weights given, checked (a plain object); undefined for seeded ones. */
  readonly weights: LinearWeights | undefined;
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly seed: number | undefined;
  readonly maxRows: number;
  readonly workspaceCount: number | undefined;
  readonly workspaceBytes: number | undefined;
  readonly faultInjection: boolean | undefined;
}

export function checkLinearOptions(options: LinearRuntimeOptions): CheckedLinearOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError(
      `LinearRuntime.start options must be an object, got ${describeValue(options)}`,
    );
  }
  checkOptionKeys('LinearRuntime.start options', options, LINEAR_KEYS);
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
  // Before any value, as Runtime.start checks its admission's keys: an unknown key is
  // OMNI_ERR_INVALID_ARGUMENT even beside a bad bound, which checkRuntimeOptions throws first.
  if (typeof libraries === 'object' && libraries !== null) {
    checkOptionKeys('libraries', libraries, LIBRARY_KEYS);
  }
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
  // Runtime.start checks its own options again, on the copies this check made of the caller's
  // nested objects: given the caller's, it read each bound and limit a second time, and a getter
  // could answer it otherwise than this check was answered.
  const copies = checkRuntimeOptions({ ...passed, worker });
  const runtime: { [K in PassedOption]: RuntimeOptions[K] } = {
    ...passed,
    admission: copies.admission,
    resourceLimits: copies.resourceLimits,
  };
  // Before the weights: a path's getter is the last caller code start() runs, and the weights
  // must reach sharedCopy as they were checked (a getter that shrank or detached them ran between
  // the two: the threads got zero-filled weights, or start() threw uncoded).
  const paths = checkLibraries(libraries);
  const weights = given === undefined ? undefined : checkWeights(given, inFeatures, outFeatures);
  // Only undefined takes the default: a null shape is a mistake, as a null seed or device is.
  const inF = weights?.inFeatures ?? checkFeatures('inFeatures', inFeatures === undefined ? 256 : inFeatures);
  const outF =
    weights?.outFeatures ?? checkFeatures('outFeatures', outFeatures === undefined ? 256 : outFeatures);
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
    throw new InvalidArgumentError(`faultInjection must be a boolean, got ${describeValue(faultInjection)}`);
  }
  return {
    runtime,
    worker,
    preference,
    selection: { device: resolvedDevice, ...paths },
    weights,
    inFeatures: inF,
    outFeatures: outF,
    seed,
    maxRows,
    workspaceCount,
    workspaceBytes,
    faultInjection,
  };
}

function checkLibraries(libraries: NativeLibraryPaths | undefined): {
  fixturePath?: string;
  cudaPath?: string;
} {
  if (libraries === undefined) return {};
  if (typeof libraries !== 'object' || libraries === null) {
    throw new InvalidArgumentError(
      `libraries must be { fixture?, cuda? } (paths), got ${describeValue(libraries)}`,
    );
  }
  // Its keys were checked first (checkLinearOptions); the paths are read like every other
  // option, inherited ones included (Object.entries alone would skip those silently).
  const paths: { fixturePath?: string; cudaPath?: string } = {};
  for (const backend of ['fixture', 'cuda'] as const) {
    const path: unknown = libraries[backend];
    if (path === undefined) continue;
    if (typeof path !== 'string' || path === '') {
      throw new InvalidArgumentError(
        `libraries.${backend} must be a non-empty path, got ${describeValue(path)}`,
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
