/**
 * Backend selection. The preference comes from the argument, else OMNI_BACKEND, else 'auto'.
 * 'auto' picks CUDA when its library loads (right ABI) and a device opens, else the fixture, and
 * says why in `reason`, so a caller can log which backend it got. Probing opens and closes a real
 * context (on a GPU this costs the context creation, once).
 *
 * Throws: InvalidArgumentError for an unknown preference, a malformed `device` or OMNI_CUDA_DEVICE
 * (whatever the backend), or an `env` or `options` that is not an object (undefined means the
 * default; null is a mistake); with an explicit 'cuda' or 'fixture', whatever loading that
 * library throws.
 */
import { describeValue, InvalidArgumentError } from '../errors.js';
import { checkOptionKeys, type OptionKeys } from '../option-keys.js';
import { NativeContext } from './context.js';
import { resolveDevice } from './device.js';
import { envValue, requireEnv } from './env.js';
import type { BackendName, NativeLibrary } from './library.js';
import { loadNativeLibrary } from './library.js';

export const BACKEND_ENV = 'OMNI_BACKEND';

/** A backend by name, or 'auto': CUDA when its library loads and the device opens, else the fixture. */
export type BackendPreference = BackendName | 'auto';

/** selectBackend()'s answer: the backend, why, and its library, loaded. */
export interface BackendChoice {
  /** The backend chosen: 'fixture' or 'cuda'. */
  readonly backend: BackendName;
  /** Human-readable: why this backend (requested, probed, or what made CUDA unusable). */
  readonly reason: string;
  /** The loaded library for that backend. */
  readonly library: NativeLibrary;
}

/** selectBackend()'s options; an unknown key or a bad value: OMNI_ERR_INVALID_ARGUMENT. */
export interface SelectOptions {
  /** The CUDA device 'auto' probes (see resolveDevice); default OMNI_CUDA_DEVICE, else 0. */
  device?: number | undefined;
  /** The fixture library to load instead of native/build/libomni_fixture.so. */
  fixturePath?: string | undefined;
  /** The CUDA library to load (and probe) instead of native/build/libomni_cuda.so. */
  cudaPath?: string | undefined;
}

const SELECT_KEYS: OptionKeys<SelectOptions> = { device: true, fixturePath: true, cudaPath: true };

/** OMNI_BACKEND as selection reads it: trimmed, and unset when blank. */
export function backendFromEnv(env: NodeJS.ProcessEnv): string | undefined {
  return envValue(env, BACKEND_ENV)?.trim() || undefined;
}

function parsePreference(value: string, source: string): BackendPreference {
  if (value === 'fixture' || value === 'cuda' || value === 'auto') return value;
  throw new InvalidArgumentError(
    `${source} must be 'fixture', 'cuda' or 'auto', got ${describeValue(value)}`,
  );
}

/**
 * Chooses and loads a backend: `preference`, else OMNI_BACKEND from `env`, else 'auto'. 'auto'
 * opens and closes a CUDA context to probe the device, falling back to the fixture (its
 * `reason` says why); a named backend throws whatever loading its library throws.
 */
export function selectBackend(
  preference?: BackendPreference,
  env: NodeJS.ProcessEnv = process.env,
  options: SelectOptions = {},
): BackendChoice {
  // null would throw an uncoded TypeError below, and a primitive would pass for "no options".
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError(
      `selectBackend options must be an object { device?, fixturePath?, cudaPath? }, got ${describeValue(options)}`,
    );
  }
  checkOptionKeys('selectBackend options', options, SELECT_KEYS);
  const fromEnv = backendFromEnv(requireEnv(env));
  const wanted =
    preference !== undefined
      ? parsePreference(preference, 'backend')
      : fromEnv
        ? parsePreference(fromEnv, BACKEND_ENV)
        : 'auto';
  const source = preference !== undefined ? 'requested' : fromEnv ? `${BACKEND_ENV}=${fromEnv}` : 'auto';
  // A malformed device is a configuration mistake whatever the backend: it throws rather than
  // being ignored (fixture, cuda: the threads' contexts would refuse it later) or falling back
  // (auto, whether or not this machine's CUDA library loads).
  const device = resolveDevice(options.device, env);
  if (wanted === 'fixture') {
    return {
      backend: 'fixture',
      reason: source,
      library: loadNativeLibrary('fixture', { path: options.fixturePath }),
    };
  }
  if (wanted === 'cuda') {
    return {
      backend: 'cuda',
      reason: source,
      library: loadNativeLibrary('cuda', { path: options.cudaPath }),
    };
  }
  const fallback = (why: string): BackendChoice => ({
    backend: 'fixture',
    reason: `auto: ${why}; using the CPU fixture`,
    library: loadNativeLibrary('fixture', { path: options.fixturePath }),
  });
  let cuda: NativeLibrary;
  try {
    cuda = loadNativeLibrary('cuda', { path: options.cudaPath });
  } catch (err) {
    return fallback(`CUDA library unusable (${(err as Error).message})`);
  }
  try {
    NativeContext.open(cuda, { device, env }).close();
  } catch (err) {
    return fallback(`CUDA device ${device} could not be opened (${(err as Error).message})`);
  }
  return { backend: 'cuda', reason: `auto: CUDA device ${device} opened`, library: cuda };
}
