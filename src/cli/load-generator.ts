/**
 * The load: a closed-loop calibration that finds the capacity, and an open-loop Poisson
 * arrival process that offers a set rate whether or not earlier requests have finished.
 *
 * Open loop: arrival i is due at an absolute time (phase start + the sum of i exponential
 * gaps). Each timer tick sends every arrival already due, so when the event loop lags the
 * generator catches up instead of silently lowering the rate, and each latency is measured
 * from the arrival's scheduled time, not from when it was sent (no coordinated omission).
 * A tick also sends what falls due within SEND_AHEAD_MS, whose latency then runs from when it
 * was sent: see SEND_AHEAD_MS.
 */
import { DeadlineError } from '../errors.js';
import type { LinearRuntime } from '../linear/linear-runtime.js';
import { BenchError } from './bench-error.js';
import type { PhaseRecorder } from './phase-recorder.js';
import { ArrivalProcess, Prng } from './prng.js';

/** Row-major inputs of 1..maxRows rows, made once; run() copies them into the worker. */
export function makeInputs(inFeatures: number, maxRows: number, seed: number): Float32Array[] {
  const prng = new Prng(seed);
  return Array.from({ length: maxRows }, (_, i) => {
    const x = new Float32Array((i + 1) * inFeatures);
    for (let j = 0; j < x.length; j++) x[j] = prng.next() * 2 - 1;
    return x;
  });
}

/**
 * Node fires a timer on a whole millisecond, never sooner than 1 ms and often up to ~1.5 ms
 * after it is due: a tick aimed at an arrival's due time sent it late, and that lateness
 * (~0.6 ms at the median, measured) was reported as the runtime's latency. So a tick is aimed
 * this much early and sends everything due by then. An early request's latency and deadline
 * run from when it was sent (it really started then); only lateness beyond this (a busy event
 * loop) still counts, as it should. Arrivals move by at most this, never across the window.
 */
export const SEND_AHEAD_MS = 1;

export interface Workload {
  readonly inputs: readonly Float32Array[];
  readonly maxRows: number;
}

export interface Calibration {
  readonly seconds: number;
  readonly concurrency: number;
  readonly completed: number;
  /** Every call made, the warm-up quarter's included. */
  readonly calls: number;
  /** Completed requests per second in the measured part (after a warm-up quarter). */
  readonly capacity: number;
}

/**
 * Keeps `concurrency` requests outstanding for `seconds` and counts completions in the last
 * three quarters (the first quarter warms the threads up).
 */
export async function calibrate(
  lr: LinearRuntime,
  work: Workload,
  seed: number,
  seconds: number,
  concurrency: number,
): Promise<Calibration> {
  const prng = new Prng(seed);
  const start = performance.now();
  const warm = start + seconds * 250;
  const end = start + seconds * 1000;
  let completed = 0;
  let calls = 0;
  const loop = async (): Promise<void> => {
    while (performance.now() < end) {
      const rows = prng.int(1, work.maxRows);
      calls++;
      await lr.run(work.inputs[rows - 1]!, { rows });
      const now = performance.now();
      if (now >= warm && now < end) completed++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  // Completions in [warm, end) over that whole window: starting the clock at the first of them
  // while still counting it overstates the rate when completions are sparse (slow calls).
  const measured = (end - warm) / 1000;
  return { seconds, concurrency, completed, calls, capacity: measured > 0 ? completed / measured : 0 };
}

/**
 * Makes exactly `calls` calls with the seeded uniform rows, `concurrency` at a time: the work
 * calibration gave one runtime, given to another so that both are as warm (threads compiled,
 * workspaces cached) when the phases compare them.
 */
export async function repeatCalls(
  lr: LinearRuntime,
  work: Workload,
  seed: number,
  calls: number,
  concurrency: number,
): Promise<void> {
  const prng = new Prng(seed);
  let made = 0;
  const loop = async (): Promise<void> => {
    while (made < calls) {
      made++;
      const rows = prng.int(1, work.maxRows);
      await lr.run(work.inputs[rows - 1]!, { rows });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, calls) }, loop));
}

export interface OpenLoopPlan {
  readonly rate: number;
  readonly windowMs: number;
  readonly seed: number;
  readonly deadlineMs: number;
  /** Called every `sampleMs` from the first arrival until the runtime is empty again. */
  readonly sampleMs: number;
  readonly onSample?: () => void;
}

/**
 * Offers `plan.rate` requests per second for `plan.windowMs`, then waits until every caller
 * has settled and the runtime's depth is back to zero (work abandoned by a caller still holds
 * its capacity until it ends), so the next phase starts on an empty runtime.
 */
export function openLoop(
  lr: LinearRuntime,
  work: Workload,
  plan: OpenLoopPlan,
  rec: PhaseRecorder,
): Promise<number> {
  const arrivals = new ArrivalProcess(plan.seed, plan.rate, work.maxRows);
  const start = performance.now();
  rec.begin(start, plan.windowMs);
  let next = arrivals.next();
  let arriving = true;

  // A phase that cannot drain (work that never ends) fails the run rather than hanging it.
  const drainLimitMs = plan.windowMs + 60_000 + 10 * plan.deadlineMs;
  return new Promise<number>((resolve, reject) => {
    const sample = (): void => {
      const report = lr.report();
      const now = performance.now();
      rec.sample(now, report.depth, report.queued);
      plan.onSample?.();
      if (!arriving && rec.settled === rec.sent && report.depth === 0) {
        clearInterval(sampler);
        resolve(now);
      } else if (now - start > drainLimitMs) {
        clearInterval(sampler);
        const unsettled = rec.sent - rec.settled;
        reject(
          new BenchError(`a phase did not drain: depth ${report.depth}, ${unsettled} callers unsettled`),
        );
      }
    };
    const sampler = setInterval(sample, plan.sampleMs);

    const send = (dueAt: number, rows: number): void => {
      rec.sentOne(rows);
      // The deadline runs from the request's due time, like its latency: a request sent late
      // (the loop was busy) has that much less time, and none at all once it is past. One sent
      // ahead of its time (SEND_AHEAD_MS) starts now.
      const now = performance.now();
      const from = Math.min(dueAt, now);
      const left = plan.deadlineMs - (now - from);
      if (!(left > 0)) {
        rec.failed(new DeadlineError('the deadline passed before the request could be sent'));
        return;
      }
      lr.run(work.inputs[rows - 1]!, { rows, deadlineMs: left }).then(
        () => {
          const now = performance.now();
          rec.completed(now, now - from);
        },
        (err: unknown) => rec.failed(err),
      );
    };

    const tick = (): void => {
      const now = performance.now() - start;
      // Catch up: everything already due goes out now, each stamped with its own due time, and
      // so does what falls due before a timer could fire again.
      while (next.at <= now + SEND_AHEAD_MS && next.at < plan.windowMs) {
        send(start + next.at, next.rows);
        next = arrivals.next();
      }
      if (next.at >= plan.windowMs) {
        arriving = false;
        return;
      }
      setTimeout(tick, Math.max(0, next.at - SEND_AHEAD_MS - (performance.now() - start)));
    };
    sample();
    tick();
  });
}
