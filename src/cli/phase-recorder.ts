/**
 * What one phase of the load saw: every request's outcome, the latency of the completed ones
 * (an HdrHistogram, in microseconds), and periodic samples of the runtime's depth.
 */
import * as hdr from 'hdr-histogram-js';

export type Mode = 'unbounded' | 'bounded';

/**
 * Latency of the completed requests. With none completed (count 0) there is no latency, and
 * every figure is null: a 0 read as "0 ms" in results.json, where nothing measured it.
 */
export interface LatencyMs {
  count: number;
  p50: number | null;
  p99: number | null;
  p999: number | null;
  max: number | null;
  mean: number | null;
}

/** One periodic sample; counters are cumulative since the phase began. */
export interface Sample {
  /** Milliseconds since the phase began (its arrival process's time 0, not its first arrival). */
  t: number;
  depth: number;
  queued: number;
  sent: number;
  completed: number;
  refused: number;
  deadline: number;
}

export interface PhaseResult {
  mode: Mode;
  /** Offered requests per second, and how it was asked for ("2x" of capacity, or absolute). */
  offeredRate: number;
  rateLabel: string;
  /** Seconds arrivals were offered. */
  windowS: number;
  /**
   * Seconds from the phase's start until every request had settled and the runtime was empty, as
   * seen by the depth samples: up to one sampling interval (10-100 ms) after it happened.
   */
  totalS: number;
  sent: number;
  /** Units (rows) the sent requests asked for. */
  sentUnits: number;
  completed: number;
  /** Refusals by admission, by reason ('requests', 'units', 'too-large'). */
  refused: number;
  refusedBy: Record<string, number>;
  /** Callers whose deadline passed first (OMNI_ERR_DEADLINE). */
  deadline: number;
  /** Anything else, by error code. */
  failed: number;
  failedBy: Record<string, number>;
  /** Completions inside the arrival window per second of it (unrounded). */
  achievedRate: number;
  /** Completed requests only, measured from each request's scheduled arrival (or its earlier send). */
  latencyMs: LatencyMs;
  /** Runtime depth (outstanding calls) sampled during the arrival window; the mean unrounded. */
  depth: { mean: number; max: number };
  timeline: Sample[];
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

export class PhaseRecorder {
  readonly mode: Mode;
  readonly offeredRate: number;
  readonly rateLabel: string;
  readonly #histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
  });
  readonly #refusedBy: Record<string, number> = {};
  readonly #failedBy: Record<string, number> = {};
  readonly #timeline: Sample[] = [];
  #sent = 0;
  #sentUnits = 0;
  #completed = 0;
  #completedInWindow = 0;
  #refused = 0;
  #deadline = 0;
  #failed = 0;
  /** performance.now() when the phase began, and the window's length in ms. */
  #start = 0;
  #windowMs = 0;

  constructor(mode: Mode, offeredRate: number, rateLabel: string) {
    this.mode = mode;
    this.offeredRate = offeredRate;
    this.rateLabel = rateLabel;
  }

  begin(start: number, windowMs: number): void {
    this.#start = start;
    this.#windowMs = windowMs;
  }

  get sent(): number {
    return this.#sent;
  }

  get lastSample(): Sample | undefined {
    return this.#timeline.at(-1);
  }

  get settled(): number {
    return this.#completed + this.#refused + this.#deadline + this.#failed;
  }

  sentOne(units: number): void {
    this.#sent++;
    this.#sentUnits += units;
  }

  /** A completed request; `latencyMs` runs from its scheduled arrival, or its send if that was earlier. */
  completed(now: number, latencyMs: number): void {
    this.#completed++;
    if (now - this.#start <= this.#windowMs) this.#completedInWindow++;
    this.#histogram.recordValue(Math.max(1, Math.round(latencyMs * 1000)));
  }

  /** Sorts a rejection by its stable code. */
  failed(err: unknown): void {
    const e = err as { code?: unknown; reason?: unknown; name?: unknown };
    const code = typeof e?.code === 'string' ? e.code : String(e?.name ?? 'Error');
    if (code === 'OMNI_ERR_REJECTED' || code === 'OMNI_ERR_TOO_LARGE') {
      const reason = code === 'OMNI_ERR_TOO_LARGE' ? 'too-large' : String(e.reason);
      this.#refused++;
      this.#refusedBy[reason] = (this.#refusedBy[reason] ?? 0) + 1;
    } else if (code === 'OMNI_ERR_DEADLINE') {
      this.#deadline++;
    } else {
      this.#failed++;
      this.#failedBy[code] = (this.#failedBy[code] ?? 0) + 1;
    }
  }

  sample(now: number, depth: number, queued: number): void {
    this.#timeline.push({
      t: round3(now - this.#start),
      depth,
      queued,
      sent: this.#sent,
      completed: this.#completed,
      refused: this.#refused,
      deadline: this.#deadline,
    });
  }

  result(end: number): PhaseResult {
    const h = this.#histogram;
    const ms = (us: number): number => round3(us / 1000);
    // HdrHistogram answers with the top of a value's bucket, while maxValue is exact: never
    // report a percentile above the largest latency recorded.
    const percentile = (p: number): number => Math.min(h.getValueAtPercentile(p), h.maxValue);
    const inWindow = this.#timeline.filter((s) => s.t <= this.#windowMs);
    const depths = (inWindow.length > 0 ? inWindow : this.#timeline).map((s) => s.depth);
    const windowS = this.#windowMs / 1000;
    return {
      mode: this.mode,
      // As resolved, not rounded: it is the rate's entry in BenchResult.rates, matched by value.
      offeredRate: this.offeredRate,
      rateLabel: this.rateLabel,
      windowS: round3(windowS),
      totalS: round3((end - this.#start) / 1000),
      sent: this.#sent,
      sentUnits: this.#sentUnits,
      completed: this.#completed,
      refused: this.#refused,
      refusedBy: { ...this.#refusedBy },
      deadline: this.#deadline,
      failed: this.#failed,
      failedBy: { ...this.#failedBy },
      // Unrounded, like depth.mean: the table rounds it to three figures, and rounding to three
      // decimals first misrounded (2.38468 became 2.385, then 2.39).
      achievedRate: this.#completedInWindow / windowS,
      latencyMs: h.totalCount
        ? {
            count: h.totalCount,
            p50: ms(percentile(50)),
            p99: ms(percentile(99)),
            p999: ms(percentile(99.9)),
            max: ms(h.maxValue),
            mean: ms(h.mean),
          }
        : { count: 0, p50: null, p99: null, p999: null, max: null, mean: null },
      depth: {
        mean: depths.length ? depths.reduce((a, b) => a + b, 0) / depths.length : 0,
        // Not Math.max(...depths): a long phase has more samples than a call takes arguments.
        max: depths.reduce((a, b) => Math.max(a, b), 0),
      },
      timeline: this.#timeline,
    };
  }
}
