/**
 * What Runtime.report() returns: the admission's counts, piscina's queue and latency
 * histograms, and how every call ended, as one plain object.
 */
import type { AdmissionReport } from '../admission/index.js';
import type { Outcomes } from './pending-task.js';

/**
 * A runtime's life: 'starting' (in start()), 'ready' (the only state run() accepts calls in),
 * 'draining' (close() called), 'stopped' (closed, or start() failed) or 'failed' (a sticky
 * error or a lost thread that could not be replaced; it never recovers).
 */
export type RuntimeState = 'starting' | 'ready' | 'draining' | 'stopped' | 'failed';

/** A latency histogram's summary, in milliseconds (all 0 before any call). */
export interface LatencySummary {
  /** The median. */
  p50: number;
  /** The 99th percentile. */
  p99: number;
  /** The largest. */
  max: number;
}

/**
 * Runtime.report(): how its calls ended (the outcomes add up to the calls made), what it holds
 * now and its state. A fresh object each call; its latency summaries are computed when read.
 */
export interface RuntimeReport extends Outcomes {
  /** The runtime's state when the report was made. */
  state: RuntimeState;
  /** Outstanding calls: admitted and not yet ended (the work, not the caller, decides). */
  depth: number;
  /** The request bound, or null for the unbounded serial scheduler. */
  capacity: number | null;
  /**
   * Admission refusals (including, with `wait`, waits that timed out and waiters close() turned
   * away); always 0 for the serial scheduler.
   */
  rejected: number;
  /** Units held by outstanding calls (0 without a unit ceiling). */
  units: number;
  /** The unit ceiling, or null when there is none. */
  unitCapacity: number | null;
  /** Callers waiting for admission (bounded `wait` mode). */
  waiting: number;
  /** Permits the leak safety net reclaimed (0 in a runtime, whose permits are all claims). */
  leaked: number;
  /**
   * Dispatched to piscina and not yet started by a worker: also a call admitted while the
   * thread's previous answer is on its way (see `running`).
   */
  queued: number;
  /**
   * Running in a worker now, or its answer still on its way to the main thread. Its capacity
   * came back as its work ended, so with a fast worker `queued + running` may exceed `depth`
   * (and the bound) for a moment.
   */
  running: number;
  /**
   * piscina's wait and run times of the calls, in milliseconds: not of the runtime's own rounds
   * at start and close (each thread's module load and init, its close hook).
   */
  waitTimeMs: LatencySummary;
  /** piscina's run times of the calls, in milliseconds (see waitTimeMs). */
  runTimeMs: LatencySummary;
}

/**
 * The part of a piscina pool a report reads. Declared here, not imported: this module's .d.ts
 * is part of the public types, and piscina's own .d.ts fails a consumer's type-check under
 * `skipLibCheck: false` with `exactOptionalPropertyTypes` or `module: node16`.
 */
export interface PoolCounts {
  readonly histogram: {
    readonly waitTime: LatencySummary | undefined;
    readonly runTime: LatencySummary | undefined;
  };
}

const summary = (h: LatencySummary | undefined): LatencySummary => ({
  p50: h?.p50 ?? 0,
  p99: h?.p99 ?? 0,
  max: h?.max ?? 0,
});

/**
 * The latency summaries as they are now, kept: a runtime's report once its close hooks begin,
 * whose rounds piscina times as it times calls.
 */
export function frozenCounts(pool: PoolCounts): PoolCounts {
  return {
    histogram: { waitTime: summary(pool.histogram.waitTime), runTime: summary(pool.histogram.runTime) },
  };
}

/**
 * `bounded` false: the serial scheduler, whose admission is only a claim window, reports no
 * capacity and no refusals (its window counts a caller woken by close() as one; the runtime
 * counts that call `unavailable`). `inflight` counts dispatched calls not yet settled by their
 * worker; `busy` the threads that are up and running a task. Every dispatched call is either
 * running on such a thread or waiting for one (in piscina's queue, or handed to a thread still
 * starting), and a thread runs one task at a time: `running` is the busy threads, at most the
 * calls in flight (a close's teardown round also keeps threads busy), and the rest are queued.
 */
export function runtimeReport(
  state: RuntimeState,
  admission: AdmissionReport,
  bounded: boolean,
  pool: PoolCounts | undefined,
  inflight: number,
  busy: number,
  outcomes: Outcomes,
): RuntimeReport {
  const running = Math.min(busy, inflight);
  return {
    state,
    depth: admission.depth,
    capacity: bounded ? admission.capacity : null,
    rejected: bounded ? admission.rejected : 0,
    units: admission.units,
    unitCapacity: admission.unitCapacity,
    waiting: admission.waiting,
    leaked: admission.leaked,
    queued: inflight - running,
    running,
    ...outcomes,
    // Getters: piscina computes ~19 percentiles per histogram on every read (about 1 ms each
    // here), which callers polling depth or state must not pay.
    get waitTimeMs() {
      return summary(pool?.histogram.waitTime);
    },
    get runTimeMs() {
      return summary(pool?.histogram.runTime);
    },
  };
}
