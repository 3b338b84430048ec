/**
 * The TypeScript mirror of native/include/omni.h: the ABI version this package speaks, the status
 * codes, the limits and the stats layout. Keep it in step with the header; the loader refuses any
 * library whose `omni_abi_version()` differs from {@link ABI_VERSION}.
 */

/** Must equal OMNI_ABI_VERSION in native/include/omni.h. */
export const ABI_VERSION = 1;

/** The C side's `omni_status` values (a NativeError's `nativeCode`). */
export const NativeStatus = {
  OK: 0,
  INVALID_ARGUMENT: 1,
  OUT_OF_MEMORY: 2,
  COPY_FAILED: 3,
  NO_DEVICE: 4,
  DEVICE: 5,
  NOT_INITIALISED: 6,
  WORKSPACE_LIMIT: 7,
  /** Sticky: the context is unusable; every later call on it fails with this code. */
  FATAL: 8,
} as const;
export type NativeStatusCode = (typeof NativeStatus)[keyof typeof NativeStatus];

/** Limits every entry point enforces (OMNI_MAX_*); TypeScript checks them too because koffi
 * silently truncates numbers that do not fit a uint32 parameter. */
export const MAX_ROWS = 65536;
/** The widest a layer's input or output may be (OMNI_MAX_FEATURES): 16,384 floats. */
export const MAX_FEATURES = 16384;
export const MAX_WORKSPACE_COUNT = 64;
export const DEFAULT_WORKSPACE_COUNT = 4;
export const DEFAULT_WORKSPACE_BYTES = 512 * 1024 * 1024;

/** omni_stats_t, in camelCase. Every count is exact for the context (one allocator wrapper). */
export interface NativeStats {
  /** Bytes the context holds now: itself, stream, weights, workspaces, staging. */
  liveBytes: number;
  /** The highest liveBytes since open. */
  peakBytes: number;
  /** Successful allocations since open (cumulative). */
  allocations: number;
  /** Stream synchronizations since open (cumulative). */
  streamSyncs: number;
  /** Workspaces in the cache now (at most the context's workspace count). */
  cachedWorkspaces: number;
  /** Bytes held by cached workspaces (device buffers plus pinned staging). */
  workspaceBytes: number;
  /** Workspaces evicted to make room for another (cumulative). */
  workspaceEvictions: number;
  /** Successful linear calls. */
  calls: number;
}
