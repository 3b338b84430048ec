/**
 * The shared words between `omni-runtime bench admission` and its worker threads. Kept apart
 * from the worker module so the command can import it without starting a worker loop.
 */

/** What each thread hammers: a raw shared word (the baseline) or one shared BoundedAdmission. */
export type ContentionMode = 'raw32' | 'raw64' | 'admission';

export interface ContenderData {
  readonly mode: ContentionMode;
  /** The raw word's buffer, or the admission's buffer (attached in the worker). */
  readonly target: SharedArrayBuffer;
  /** Int32 words below; one per handshake step. */
  readonly control: SharedArrayBuffer;
  /** Two Float64 per thread: pairs done and refusals (always 0 here), written after STOP. */
  readonly results: SharedArrayBuffer;
  readonly index: number;
  /** 0: request-only (tryAdmit() / Int32 baseline); otherwise the unit cost per admit. */
  readonly cost: number;
}

/** Threads that have loaded and are about to wait for GO (the main thread waits for all). */
export const READY = 0;
/** Set to 1 (and notified) when timing starts: every thread begins within a wake-up. */
export const GO = 1;
/** Set to 1 when timing ends; threads check it between batches. */
export const STOP = 2;
/** Threads that have written their count (the main thread reads results after all). */
export const DONE = 3;
export const CONTROL_WORDS = 4;

/** Pairs per batch between STOP checks: the check stays off the measured path. */
export const BATCH = 1000;
/** A bound far above any thread count: the measured path admits, it never refuses. */
export const BENCH_REQUESTS = 1 << 20;
export const BENCH_UNITS = 2 ** 30;
/**
 * The raw 64-bit baseline's refusal limit. Like the bounds above it is never reached (the
 * measured path only admits); it is there so the raw loop does the same load, compare and
 * compare-exchange as an admission, not to refuse where the admission would.
 */
export const RAW64_LIMIT = 1n << 50n;
