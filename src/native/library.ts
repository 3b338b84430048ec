/**
 * Loading a native backend and the ABI handshake.
 *
 * Throws: LibraryNotFoundError (no file at the path, or not a regular file there, koffi has no
 * native module of its own, the file would not load, it lacks a symbol of the ABI, or it is the
 * other backend's library, or an ABI name it binds resolves to data, not code),
 * AbiMismatchError (the library's omni_abi_version() differs from ABI_VERSION; both versions
 * are named).
 */
import { type Stats, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { LibraryHandle } from 'koffi';
import { AbiMismatchError, describeValue, InvalidArgumentError, LibraryNotFoundError } from '../errors.js';
import { checkOptionKeys, type OptionKeys } from '../option-keys.js';
import { nativeBuildDir, packageRoot } from '../paths.js';
import { ABI_VERSION } from './abi.js';
import type { RawFixtureApi, RawNativeApi } from './bindings.js';
import { bindAbiVersion, bindCore, bindFixture, CORE_SYMBOLS, FIXTURE_SYMBOLS } from './bindings.js';
import { inCode } from './code-addresses.js';
import { inData } from './data-addresses.js';
import { koffi } from './koffi.js';

/** A native backend: 'fixture' (the CPU library) or 'cuda'. */
export type BackendName = 'fixture' | 'cuda';

/** A loaded native library whose ABI version matched (loaded once per path in each thread). */
export interface NativeLibrary {
  /** The backend it was loaded as (and says it is). */
  readonly backend: BackendName;
  /** Absolute path the library was loaded from. */
  readonly path: string;
  /** Its omni_abi_version(): always this package's ABI version (else it was refused). */
  readonly abiVersion: number;
  /** What the library calls itself (omni_backend_name()). */
  readonly backendName: string;
  /** Unchecked bindings, for NativeContext and for tests that must reach the C side's own checks. */
  readonly raw: RawNativeApi;
  /** Fault hooks and the naive reference; null for any backend but the fixture. */
  readonly fixture: RawFixtureApi | null;
}

/** loadNativeLibrary()'s options; an unknown key or a bad path: OMNI_ERR_INVALID_ARGUMENT. */
export interface LoadOptions {
  /** Overrides the default native/build/libomni_<backend>.so. */
  path?: string | undefined;
}

const LOAD_KEYS: OptionKeys<LoadOptions> = { path: true };

// Module state is per thread (each worker evaluates its own copy), which is what koffi needs:
// function objects it hands out belong to the thread that bound them.
const loaded = new Map<string, NativeLibrary>();

/** Where `npm run build` puts a backend's library. */
export function defaultLibraryPath(backend: BackendName): string {
  return join(nativeBuildDir, `libomni_${backend}.so`);
}

/**
 * Loads a backend's library on the calling thread and checks its ABI handshake (cached per
 * path). Throws OMNI_ERR_LIBRARY_NOT_FOUND (missing, not a library, the other backend's, koffi
 * without its binary), OMNI_ERR_ABI_MISMATCH, or OMNI_ERR_INVALID_ARGUMENT for bad arguments.
 */
export function loadNativeLibrary(backend: BackendName, options: LoadOptions = {}): NativeLibrary {
  if (backend !== 'fixture' && backend !== 'cuda') {
    throw new InvalidArgumentError(
      `unknown native backend ${describeValue(backend)} (want 'fixture' or 'cuda')`,
    );
  }
  // Checked like LinearRuntime's `libraries`: null options threw an uncoded TypeError, a
  // primitive or a null path silently loaded the default library, a number reached resolve().
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError(
      `loadNativeLibrary options must be an object { path? }, got ${describeValue(options)}`,
    );
  }
  checkOptionKeys('loadNativeLibrary options', options, LOAD_KEYS);
  const given: unknown = options.path;
  if (given !== undefined && (typeof given !== 'string' || given === '')) {
    throw new InvalidArgumentError(`path must be a non-empty string, got ${describeValue(given)}`);
  }
  const path = resolve(given ?? defaultLibraryPath(backend));
  const cached = loaded.get(path);
  if (cached !== undefined) {
    if (cached.backend !== backend) throw wrongBackend(path, cached.backendName, backend);
    return cached;
  }
  const stat = statOf(path);
  if (stat === undefined) {
    // The default library is built by the package's install step, which npm may not have run
    // (npm 11 asks before running a dependency's scripts): say how to build it.
    throw new LibraryNotFoundError(path, `native library not found at ${path}${buildHint(given, 'build')}`);
  }
  // dlopen opens what it is given before it reads a byte: a named pipe blocks that open until a
  // writer comes (forever, and this thread with it: a load is synchronous), a terminal until
  // input does. Only a regular file (or a link to one) can be a library.
  if (!stat.isFile()) {
    throw new LibraryNotFoundError(path, `${path} is not a regular file, so not a native library`);
  }

  // Outside the try below: koffi's own missing native module is not this library's fault.
  const ffi = koffi();
  let handle: LibraryHandle;
  try {
    handle = ffi.load(path);
  } catch (err) {
    throw new LibraryNotFoundError(
      path,
      `native library at ${path} could not be loaded: ${(err as Error).message}`,
    );
  }
  // A refused library is unloaded now, whatever refused it: left to koffi, its mapping stayed
  // until a garbage collection took the handle, and dlopen answered a load of that path (the
  // library rebuilt as the refusal said) with it: the same refusal, for as long as none ran.
  let library: NativeLibrary;
  try {
    library = handshake(handle, path, backend, given);
  } catch (err) {
    handle.unload();
    throw err;
  }
  loaded.set(path, library);
  return library;
}

/**
 * The checks a loaded library must pass before anything else calls it: ABI names in code, the
 * version, every symbol, the backend's own name. Throws the refusal; the caller unloads it.
 */
function handshake(
  handle: LibraryHandle,
  path: string,
  backend: BackendName,
  given: string | undefined,
): NativeLibrary {
  refuseNonCode(handle, path, backend);
  let abiVersion: number;
  try {
    abiVersion = bindAbiVersion(handle)();
  } catch (err) {
    throw new LibraryNotFoundError(path, `${path} is not an omni native library: ${(err as Error).message}`);
  }
  if (abiVersion !== ABI_VERSION) {
    throw new AbiMismatchError(
      ABI_VERSION,
      abiVersion,
      // The default one is stale when the package was upgraded over a build it did not redo.
      `native library ${path} has ABI version ${abiVersion}; this package expects ABI version ${ABI_VERSION}${buildHint(given, 'rebuild')}`,
    );
  }
  const raw = bindOrRefuse(path, () => bindCore(handle));
  const backendName = raw.omni_backend_name();
  // A path given for one backend may hold the other's library (same ABI, same symbols): using
  // it would report the wrong backend and, for the fixture, miss its fault hooks.
  if (backendName !== backend) throw wrongBackend(path, backendName, backend);
  return Object.freeze({
    backend,
    path,
    abiVersion,
    backendName,
    raw,
    fixture: backend === 'fixture' ? bindOrRefuse(path, () => bindFixture(handle)) : null,
  });
}

/**
 * Every name the load binds is called as a function: one that resolves to data (a variable of
 * the library's, or of a library it depends on, where dlsym also looks) would be called into its
 * bytes and the process would die (SIGSEGV), the version probe first. So before any call, each
 * bound name's address must lie in an executable mapping of this process, and the dynamic linker
 * must not place it in data: a symbol it types as data (read-only data may share the code's
 * mapping), or no loaded object at all (a thread-local variable's); else the library is unloaded
 * and refused. Only those names: a library may export data of its own under the prefix (a build
 * id), and nothing calls that. A name that does not resolve is left to the binding, which says
 * it is missing. Where neither can be read (not Linux) it cannot tell: the load goes on.
 */
function refuseNonCode(handle: LibraryHandle, path: string, backend: BackendName): void {
  const ffi = koffi();
  const bound = backend === 'fixture' ? [...CORE_SYMBOLS, ...FIXTURE_SYMBOLS] : CORE_SYMBOLS;
  const names: string[] = [];
  const addresses: bigint[] = [];
  for (const name of bound) {
    let address: bigint;
    try {
      address = ffi.address(handle.symbol(name));
    } catch {
      continue;
    }
    names.push(name);
    addresses.push(address);
  }
  const code = inCode(addresses);
  const data = inData(addresses);
  const refused = names.filter((_, i) => code?.[i] === false || data?.[i] === true);
  if (refused.length === 0) return;
  throw new LibraryNotFoundError(
    path,
    `${path} is not an omni native library: ${refused.join(', ')} ${refused.length === 1 ? 'resolves' : 'resolve'} to data, not code`,
  );
}

/** For this package's own library (no path given), how to build it; '' for a library of the caller's. */
function buildHint(given: string | undefined, verb: 'build' | 'rebuild'): string {
  if (given !== undefined) return '';
  return `; ${verb} it with: node ${shellWord(join(packageRoot, 'scripts', 'build-native.mjs'))} (needs cc; nvcc for cuda)`;
}

/** What is at `path`, or undefined for nothing this process can reach (as existsSync tells it). */
function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/**
 * `text` as one word of a POSIX shell command line: a project's path may hold a space, and the
 * build command in a message is there to be pasted into a shell.
 */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** A library that passed the handshake but lacks a symbol of the ABI (a partial or foreign build). */
function bindOrRefuse<T>(path: string, bind: () => T): T {
  try {
    return bind();
  } catch (err) {
    throw new LibraryNotFoundError(
      path,
      `${path} is missing part of the omni ABI: ${(err as Error).message}`,
    );
  }
}

function wrongBackend(path: string, found: string, wanted: BackendName): LibraryNotFoundError {
  return new LibraryNotFoundError(
    path,
    `${path} is the ${JSON.stringify(found)} native library, not the ${wanted} one`,
  );
}
