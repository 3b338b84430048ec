/** What the runtime gives the built-in native worker, and what each call sends it. */
import type { BackendName } from '../native/index.js';

/**
 * A linear layer's parameters, y = GELU(x W^T + b). Checked once at start (shape and lengths;
 * OMNI_ERR_INVALID_ARGUMENT) and copied into shared memory: later changes to these arrays do not
 * reach the threads.
 */
export interface LinearWeights {
  /** outFeatures x inFeatures, row-major. */
  readonly w: Float32Array;
  /** The bias, outFeatures long. */
  readonly b: Float32Array;
  /** Input width, an integer from 1 to MAX_FEATURES. */
  readonly inFeatures: number;
  /** Output width, an integer from 1 to MAX_FEATURES. */
  readonly outFeatures: number;
}

export interface NativeWorkerData {
  readonly backend: BackendName;
  readonly libraryPath?: string | undefined;
  readonly device: number | undefined;
  readonly weights: LinearWeights;
  readonly workspaceCount?: number | undefined;
  readonly workspaceBytes?: number | undefined;
  /**
   * A ContextLedger's buffer: each thread records its context there, so that the main thread
   * can close the context of a thread that ended without its close hook (see ContextReclaim).
   */
  readonly contexts?: SharedArrayBuffer | undefined;
  /** Test hook: lets calls inject the fixture's faults. Off unless asked for. */
  readonly faultInjection?: boolean | undefined;
}

export type NativeWorkerInput =
  | { readonly x: Float32Array; readonly rows: number }
  | { readonly stats: true }
  | { readonly inject: FaultKind; readonly after?: number };

/**
 * The fixture faults a `{ inject }` call arms on its thread's context, as FixtureFaults does:
 * 'fatal' poisons it now; the `after`th copy (default 1), stream sync (default 1) or allocation
 * (default 0: disarm) from then on fails. Only an absent `after` takes the default; 'fatal'
 * takes none.
 */
export const FAULT_KINDS = ['fatal', 'copy', 'alloc', 'sync'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
