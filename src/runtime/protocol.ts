/** Messages between the runtime and its worker entry (plain, structured-cloneable data). */
import type { WireError } from '../wire-error.js';

/**
 * Sent once per thread: 'ping' at start (every thread must answer before start() resolves),
 * 'teardown' at a clean close (each thread runs its worker's close hook).
 */
export interface PingMessage {
  readonly kind: 'ping' | 'teardown';
  /** Int32[0] counts arrivals (see ABANDONED); each ping blocks until all `threads` have arrived. */
  readonly barrier: SharedArrayBuffer;
  readonly threads: number;
  readonly timeoutMs: number;
}

/**
 * The barrier's one Int32 word: arrivals, plus ABANDONED, set by a start that gave up (a thread
 * exited, or one's init never finished). Pings then stop waiting, and each thread whose init
 * succeeded runs its close hook before it answers. One word, so a thread about to wait can never
 * miss the flag: setting it changes the value the wait compares.
 *
 * Invariants: within a round the arrivals only grow and the flag, once set, stays; a thread
 * waits at most the round's timeoutMs, and leaves at once when every thread has arrived or the
 * flag is set.
 * Memory ordering: an arrival is an Atomics.add, the flag an Atomics.or, each before its notify
 * (workers/entry.ts, pool.ts); a waiter reads the word again after every wake, and
 * Atomics.wait compares that same word, so neither an arrival nor the flag is slept through.
 * Abort safety: a thread terminated at the barrier has already counted itself; one that never
 * arrives holds the others only until their timeout, or until the main thread sets the flag.
 * Throws: nothing.
 */
export const ABANDONED = 1 << 30;

export type PingReply = (
  | { readonly ok: true; readonly threadId: number }
  | { readonly ok: false; readonly threadId: number; readonly error: WireError }
) & {
  /** The ping stopped waiting because the start was abandoned (and its close hook ran). */
  readonly abandoned?: true;
};

export type SkipReason = 'aborted' | 'deadline';

/**
 * `skipped`: the task ended for its caller's reason, not its own: it never ran (cancelled, or
 * past its deadline, before it started), or its handler gave up on ctx.signal / ctx.cancelled
 * by throwing an AbortError.
 */
export type TaskReply<T = unknown> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: WireError }
  | { readonly ok: false; readonly skipped: SkipReason };

/** What the runtime gives every worker thread through piscina's workerData. */
export interface EntryData {
  readonly admission: SharedArrayBuffer;
  readonly cancel: SharedArrayBuffer;
  /**
   * Int32[0] counts threads whose worker module has loaded (init run, whether or not it threw).
   * The entry counts itself before piscina posts its ready message, so the main thread can tell
   * a thread that is up but whose ready message is still in flight (see ReplacementWatch).
   */
  readonly loaded: SharedArrayBuffer;
  /** file: URL of the user's worker module (its default export is a defineWorker result). */
  readonly module: string;
  /** The caller's `workerData`, handed to the worker's init. */
  readonly data: unknown;
}
