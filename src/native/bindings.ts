/**
 * koffi declarations of the native ABI. Types are anonymous on purpose: koffi registers named types
 * per thread, and this module may be evaluated twice in one thread (src/ under vitest and dist/).
 * Every function returns the raw status; mapping to errors lives in status.ts.
 */

import type { LibraryHandle, TypeObject } from 'koffi';
import { koffi } from './koffi.js';

/** An open context as koffi returns it (a BigInt address in koffi 3); opaque to callers. */
export type RawHandle = unknown;

/** omni_open_options, field for field. */
export interface RawOpenOptions {
  /** Cached workspaces, at most 64; 0 means the default (4). */
  workspace_count: number;
  /** Must be 0. */
  reserved: number;
  /** Bytes the cached workspaces may hold together; 0 means the default (512 MiB). */
  workspace_bytes: number;
}

type Floats = Float32Array | null;

/** The ABI as bound: thin, unchecked calls straight into the library. */
export interface RawNativeApi {
  /** The library's OMNI_ABI_VERSION. */
  omni_abi_version(): number;
  /** 'fixture' or 'cuda'. */
  omni_backend_name(): string;
  /**
   * Opens a context on `device` (null options: the defaults) into `out[0]`; returns an
   * omni_status (see NativeStatus), and on failure leaves `out[0]` null.
   */
  omni_open(device: number, options: RawOpenOptions | null, out: [RawHandle | null]): number;
  /** Synchronizes and frees everything, even after a fatal error; null is a no-op. */
  omni_close(ctx: RawHandle | null): number;
  /**
   * Copies W (outFeatures x inFeatures) and b (outFeatures) into the context; a failed upload
   * keeps the previous weights. Returns an omni_status.
   */
  omni_upload_weights(
    ctx: RawHandle | null,
    w: Floats,
    wLen: number,
    b: Floats,
    bLen: number,
    outFeatures: number,
    inFeatures: number,
  ): number;
  /**
   * y = GELU(x W^T + b) for `rows` rows (1..MAX_ROWS), synchronously; x and y may overlap.
   * Returns an omni_status.
   */
  omni_linear_gelu(
    ctx: RawHandle | null,
    x: Floats,
    xLen: number,
    rows: number,
    y: Floats,
    yLen: number,
  ): number;
  /** Fills `out` with omni_stats_t's fields (snake_case). Returns an omni_status. */
  omni_stats(ctx: RawHandle | null, out: Record<string, number | bigint> | null): number;
  /** The message of the last failure on ctx, or of this thread's last one without a context. */
  omni_last_error(ctx: RawHandle | null): string;
}

/** Fixture-only exports (native/fixture/omni_fixture.h). */
export interface RawFixtureApi {
  /** This thread's nth allocation from now on fails (1: the next one); 0 disarms. */
  omni_fixture_fail_alloc_after(n: number): void;
  /** The nth host<->device copy on ctx from now on fails (OMNI_E_COPY_FAILED); 0 disarms. */
  omni_fixture_fail_copy_after(ctx: RawHandle | null, n: number): number;
  /** The nth stream sync on ctx from now on fails (OMNI_E_DEVICE, not sticky); 0 disarms. */
  omni_fixture_fail_sync_after(ctx: RawHandle | null, n: number): number;
  /** Puts ctx into the sticky fatal state: every later call on it returns OMNI_E_FATAL. */
  omni_fixture_inject_fatal(ctx: RawHandle | null): number;
  /** Bytes every fixture context in the process holds now (half-built ones too). */
  omni_fixture_live_bytes(): number | bigint;
  /** The plain triple-loop reference of omni_linear_gelu, without a context. */
  omni_fixture_reference_linear_gelu(
    x: Floats,
    xLen: number,
    rows: number,
    w: Floats,
    wLen: number,
    b: Floats,
    bLen: number,
    outFeatures: number,
    inFeatures: number,
    y: Floats,
    yLen: number,
  ): number;
}

interface AbiTypes {
  readonly ctxPtr: TypeObject;
  readonly openOptions: TypeObject;
  readonly stats: TypeObject;
  readonly floats: TypeObject;
}

let types: AbiTypes | undefined;

/**
 * The ABI's koffi types, made on first use (koffi is loaded then, not when the package is
 * imported) and kept, once per thread as this module is.
 */
function abiTypes(): AbiTypes {
  if (types !== undefined) return types;
  const k = koffi();
  types = {
    ctxPtr: k.pointer(k.opaque()),
    openOptions: k.struct({
      workspace_count: 'uint32',
      reserved: 'uint32',
      workspace_bytes: 'uint64',
    }),
    stats: k.struct({
      live_bytes: 'uint64',
      peak_bytes: 'uint64',
      allocations: 'uint64',
      stream_syncs: 'uint64',
      cached_workspaces: 'uint64',
      workspace_bytes: 'uint64',
      workspace_evictions: 'uint64',
      calls: 'uint64',
    }),
    // Typed arrays go through as their own memory, whatever the pointer's constness.
    floats: k.pointer('float'),
  };
  return types;
}

/** The names bindCore binds, every one a function of the library's. */
export const CORE_SYMBOLS: readonly string[] = [
  'omni_abi_version',
  'omni_backend_name',
  'omni_open',
  'omni_close',
  'omni_upload_weights',
  'omni_linear_gelu',
  'omni_stats',
  'omni_last_error',
];

/** The names bindFixture binds (the fixture's own, beside the core ones). */
export const FIXTURE_SYMBOLS: readonly string[] = [
  'omni_fixture_fail_alloc_after',
  'omni_fixture_fail_copy_after',
  'omni_fixture_fail_sync_after',
  'omni_fixture_inject_fatal',
  'omni_fixture_live_bytes',
  'omni_fixture_reference_linear_gelu',
];

/** Only the version probe: bound before anything else so a mismatching library is refused before
 * its other symbols (which may differ) are touched. */
export function bindAbiVersion(lib: LibraryHandle): () => number {
  return lib.func('omni_abi_version', 'int', []) as () => number;
}

export function bindCore(lib: LibraryHandle): RawNativeApi {
  const k = koffi();
  const { ctxPtr, openOptions, stats, floats } = abiTypes();
  return {
    omni_abi_version: bindAbiVersion(lib),
    omni_backend_name: lib.func('omni_backend_name', 'const char *', []),
    omni_open: lib.func('omni_open', 'int', ['int', k.pointer(openOptions), k.out(k.pointer(ctxPtr))]),
    omni_close: lib.func('omni_close', 'int', [ctxPtr]),
    omni_upload_weights: lib.func('omni_upload_weights', 'int', [
      ctxPtr,
      floats,
      'size_t',
      floats,
      'size_t',
      'uint32',
      'uint32',
    ]),
    omni_linear_gelu: lib.func('omni_linear_gelu', 'int', [
      ctxPtr,
      floats,
      'size_t',
      'uint32',
      floats,
      'size_t',
    ]),
    omni_stats: lib.func('omni_stats', 'int', [ctxPtr, k.out(k.pointer(stats))]),
    omni_last_error: lib.func('omni_last_error', 'const char *', [ctxPtr]),
  };
}

export function bindFixture(lib: LibraryHandle): RawFixtureApi {
  const { ctxPtr, floats } = abiTypes();
  return {
    omni_fixture_fail_alloc_after: lib.func('omni_fixture_fail_alloc_after', 'void', ['uint32']),
    omni_fixture_fail_copy_after: lib.func('omni_fixture_fail_copy_after', 'int', [ctxPtr, 'uint32_t']),
    omni_fixture_fail_sync_after: lib.func('omni_fixture_fail_sync_after', 'int', [ctxPtr, 'uint32_t']),
    omni_fixture_inject_fatal: lib.func('omni_fixture_inject_fatal', 'int', [ctxPtr]),
    omni_fixture_live_bytes: lib.func('omni_fixture_live_bytes', 'uint64', []),
    omni_fixture_reference_linear_gelu: lib.func('omni_fixture_reference_linear_gelu', 'int', [
      floats,
      'size_t',
      'uint32',
      floats,
      'size_t',
      floats,
      'size_t',
      'uint32',
      'uint32',
      floats,
      'size_t',
    ]),
  };
}
