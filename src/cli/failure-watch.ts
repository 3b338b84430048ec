/**
 * Tells `omni-runtime serve` that its runtime has failed. A failed runtime never recovers
 * (README: close it and start another), so a server left running on one answers 503 to every
 * call and to /health for good, and a supervisor that restarts only exited processes keeps it.
 *
 * The runtime has no failure event (a fatal native error, a lost thread whose replacement did
 * not come up, and a pool left without threads each fail it from a different place), so its
 * state is read from report(): at once, then every FAILURE_POLL_MS. One report is a few
 * shared-memory reads; the interval is unref'd, so it never holds the process up.
 */
import type { Served } from '../serve/server.js';

/** How often the state is read: a failure is noticed within this many milliseconds. */
export const FAILURE_POLL_MS = 100;

export interface FailureWatch {
  /** Resolves once the runtime reports 'failed' (never, if it does not before stop()). */
  readonly failed: Promise<void>;
  stop(): void;
}

export function watchFailure(runtime: Pick<Served, 'report'>, intervalMs = FAILURE_POLL_MS): FailureWatch {
  let timer: NodeJS.Timeout | undefined;
  const stop = (): void => clearInterval(timer);
  const failed = new Promise<void>((resolve) => {
    const check = (): void => {
      let state: string;
      try {
        state = runtime.report().state;
      } catch {
        // A hand-written runtime's report() that throws says nothing about failure; a throw
        // from an interval would end the process instead of draining it.
        return;
      }
      if (state !== 'failed') return;
      stop();
      resolve();
    };
    timer = setInterval(check, intervalMs).unref();
    check();
  });
  return { failed, stop };
}

/** The one line a failure becomes on stderr: its code, when it has one, then its message. */
export function failureLine(failure: unknown): string {
  const e = failure as { code?: unknown; message?: unknown } | undefined;
  const code = typeof e?.code === 'string' ? `${e.code}: ` : '';
  const message =
    typeof e?.message === 'string' && e.message !== '' ? e.message : 'the runtime reports state failed';
  return `omni-runtime serve: the runtime failed: ${code}${message}`.replace(/\s+/g, ' ').trim();
}
