/**
 * Tells `omni-runtime serve` that its runtime has failed. A failed runtime never recovers
 * (docs/runtime.md: close it and start another), so a server left running on one answers 503 to every
 * call and to /health for good, and a supervisor that restarts only exited processes keeps it.
 *
 * A LinearRuntime's Runtime says so itself (`runtime.whenFailed()`, resolved the moment its
 * `failure` is set), so the watch only waits on that: no timer, nothing read. A hand-written
 * runtime (ServeCommandDeps lets tests and embedders pass one) may lack it; its state is then
 * read from report(): at once, then every FAILURE_POLL_MS. One report is a few shared-memory
 * reads; the interval is unref'd, so it never holds the process up.
 */
import type { Served } from '../serve/served.js';

/** How often a runtime without whenFailed() is read: a failure is noticed within this long. */
export const FAILURE_POLL_MS = 100;

/** What the watch reads: the served runtime and, when it has one, the Runtime under it. */
export type Watched = Pick<Served, 'report'> & {
  readonly runtime?: { whenFailed?: (() => Promise<unknown>) | undefined } | undefined;
};

export interface FailureWatch {
  /** Resolves once the runtime has failed (never, if it does not before stop()). */
  readonly failed: Promise<void>;
  stop(): void;
}

export function watchFailure(runtime: Watched, intervalMs = FAILURE_POLL_MS): FailureWatch {
  let whenFailed: unknown;
  try {
    whenFailed = runtime.runtime?.whenFailed?.();
  } catch {
    // A hand-written whenFailed() that throws says nothing: its state still can.
  }
  return typeof (whenFailed as PromiseLike<unknown> | undefined)?.then === 'function'
    ? listen(whenFailed as PromiseLike<unknown>, runtime, intervalMs)
    : poll(runtime, intervalMs);
}

/**
 * whenFailed() resolves whenever `failure` is set, also while the runtime drains; the command
 * closes its runtime only through the drain that follows stop(), so here it means 'failed'.
 */
function listen(whenFailed: PromiseLike<unknown>, runtime: Watched, intervalMs: number): FailureWatch {
  let stopped = false;
  let polling: FailureWatch | undefined;
  const failed = new Promise<void>((resolve) => {
    // Promise.resolve adopts a hand-written thenable as a promise would: a then() that throws
    // becomes a rejection, and only its first call back counts. Runtime's never rejects; a
    // hand-written one that does is read as if it had none.
    Promise.resolve(whenFailed).then(
      () => {
        if (!stopped) resolve();
      },
      () => {
        if (stopped) return;
        polling = poll(runtime, intervalMs);
        void polling.failed.then(resolve);
      },
    );
  });
  return {
    failed,
    stop: () => {
      stopped = true;
      polling?.stop();
    },
  };
}

function poll(runtime: Pick<Served, 'report'>, intervalMs: number): FailureWatch {
  let timer: NodeJS.Timeout | undefined;
  const stop = (): void => clearInterval(timer);
  const failed = new Promise<void>((resolve) => {
    const check = (): void => {
      if (!reportsFailed(runtime)) return;
      stop();
      resolve();
    };
    timer = setInterval(check, intervalMs).unref();
    check();
  });
  return { failed, stop };
}

/** Whether report() says 'failed': all a runtime without whenFailed() (or `failure`) tells. */
export function reportsFailed(runtime: Pick<Served, 'report'>): boolean {
  try {
    return runtime.report().state === 'failed';
  } catch {
    // A hand-written runtime's report() that throws says nothing about failure; a throw from
    // the watch's interval would end the process instead of draining it.
    return false;
  }
}

/** The one line a failure becomes on stderr: its code, when it has one, then its message. */
export function failureLine(failure: unknown): string {
  const e = failure as { code?: unknown; message?: unknown } | undefined;
  const code = typeof e?.code === 'string' ? `${e.code}: ` : '';
  const message =
    typeof e?.message === 'string' && e.message !== '' ? e.message : 'the runtime reports state failed';
  return `omni-runtime serve: the runtime failed: ${code}${message}`.replace(/\s+/g, ' ').trim();
}
