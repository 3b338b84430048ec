/**
 * One phase's bookkeeping, in-process: latency percentiles in milliseconds of completed requests,
 * the achieved rate over the arrival window only, every outcome sorted by its stable code, and
 * depth statistics of the window (not of the drain after it).
 */
import { describe, expect, it } from 'vitest';
import { formatTable } from '../src/cli/bench-report.js';
import { PhaseRecorder } from '../src/cli/phase-recorder.js';
import { DeadlineError, RejectedError, TaskFailedError, TooLargeError } from '../src/errors.js';
import { benchResult } from './fixtures/bench-result.js';

const snapshot = { depth: 4, capacity: 4, rejected: 1 };

describe('PhaseRecorder', () => {
  it('reports latency percentiles, max and mean in milliseconds', () => {
    const rec = new PhaseRecorder('bounded', 100, '100/s');
    rec.begin(0, 10_000);
    // 1..1000 ms, one each: p50 500, p99 990, p99.9 999, max 1000, mean 500.5.
    for (let ms = 1; ms <= 1000; ms++) {
      rec.sentOne(1);
      rec.completed(ms, ms);
    }
    const { latencyMs } = rec.result(10_000);
    expect(latencyMs.count).toBe(1000);
    // HdrHistogram keeps three significant digits: allow its 0.1 % bucket width.
    const near = (actual: number | null, expected: number): void => {
      expect(actual).toBeGreaterThanOrEqual(expected * 0.999);
      expect(actual).toBeLessThanOrEqual(expected * 1.001);
    };
    near(latencyMs.p50, 500);
    near(latencyMs.p99, 990);
    near(latencyMs.p999, 999);
    near(latencyMs.max, 1000);
    near(latencyMs.mean, 500.5);
  });

  it('never reports a percentile above the largest latency recorded (HdrHistogram rounds up)', () => {
    const rec = new PhaseRecorder('bounded', 100, '100/s');
    rec.begin(0, 1000);
    for (let i = 0; i < 10; i++) {
      rec.sentOne(1);
      rec.completed(1, 7.273);
    }
    const { latencyMs } = rec.result(1000);
    expect(latencyMs.max).toBe(7.273);
    expect([latencyMs.p50, latencyMs.p99, latencyMs.p999]).toEqual([7.273, 7.273, 7.273]);
  });

  it('gives the largest latency as p99.9 under 1,000 completions (docs/benchmarks.md), the 999th of 1,000', () => {
    const p999 = (count: number): number => {
      const rec = new PhaseRecorder('bounded', 100, '100/s');
      rec.begin(0, 10_000);
      // 1..count ms, one each, shuffled by a fixed stride so order cannot matter.
      for (let i = 0; i < count; i++) {
        rec.sentOne(1);
        rec.completed(1, ((i * 7919) % count) + 1);
      }
      const { latencyMs } = rec.result(10_000);
      expect(latencyMs.max).toBe(count);
      return latencyMs.p999!;
    };
    expect(p999(999)).toBe(999);
    expect(p999(10)).toBe(10);
    // The 999th, within HdrHistogram's three digits (its bucket at 999 ms is 0.5 ms wide).
    expect(p999(1000)).toBeGreaterThanOrEqual(999);
    expect(p999(1000)).toBeLessThan(1000);
  });

  it("keeps a latency past the histogram's first range (an hour): counted, never clipped", () => {
    // --deadline-ms takes any length, so a completion can take longer than the 1 h the
    // histogram is built for; it must still count, at its own value.
    const rec = new PhaseRecorder('unbounded', 1, '1/s');
    rec.begin(0, 10_000);
    for (const ms of [5, 2 * 3_600_000]) {
      rec.sentOne(1);
      rec.completed(1, ms);
    }
    const { latencyMs } = rec.result(10_000);
    expect(latencyMs.count).toBe(2);
    expect(latencyMs.max).toBe(7_200_000);
    expect(latencyMs.p99).toBe(7_200_000);
    expect(latencyMs.p50).toBeCloseTo(5, 2);
  });

  it('reports the largest latency as max, not a percentile of them', () => {
    const rec = new PhaseRecorder('bounded', 100, '100/s');
    rec.begin(0, 10_000);
    for (let i = 0; i < 1000; i++) {
      rec.sentOne(1);
      rec.completed(1, i === 500 ? 700 : 1);
    }
    const { latencyMs } = rec.result(10_000);
    expect(latencyMs.p999).toBeCloseTo(1, 2);
    expect(latencyMs.max).toBeGreaterThanOrEqual(700 * 0.999);
    expect(latencyMs.max).toBeLessThanOrEqual(700 * 1.001);
    expect(latencyMs.mean).toBeCloseTo(1.699, 2);
  });

  it('keeps sub-millisecond latencies (they are recorded in microseconds)', () => {
    const rec = new PhaseRecorder('unbounded', 100, '1x');
    rec.begin(0, 1000);
    for (const ms of [0.25, 0.5, 0.75]) {
      rec.sentOne(1);
      rec.completed(1, ms);
    }
    const { latencyMs } = rec.result(1000);
    expect(latencyMs.p50).toBeCloseTo(0.5, 2);
    expect(latencyMs.max).toBeCloseTo(0.75, 2);
  });

  it('records a latency to the nearest microsecond, not truncated to the one below', () => {
    const rec = new PhaseRecorder('unbounded', 100, '1x');
    rec.begin(0, 1000);
    rec.sentOne(1);
    rec.completed(1, 0.0016); // 1.6 us: 2 us, not 1
    expect(rec.result(1000).latencyMs).toMatchObject({ p50: 0.002, max: 0.002 });
  });

  it('reports the mean to the microsecond, as it does the percentiles', () => {
    const rec = new PhaseRecorder('unbounded', 100, '1x');
    rec.begin(0, 1000);
    for (const ms of [0.001, 0.002, 0.002]) {
      rec.sentOne(1);
      rec.completed(1, ms);
    }
    // 5 us over 3 completions: 1.667 us, 0.002 ms, not 0.0016666...
    expect(rec.result(1000).latencyMs.mean).toBe(0.002);
  });

  it('counts completions inside the arrival window per second of it', () => {
    const rec = new PhaseRecorder('bounded', 10, '10/s');
    rec.begin(1000, 2000); // the window is [1000, 3000]
    for (const now of [1500, 2500, 3000, 3500, 9000]) {
      rec.sentOne(1);
      rec.completed(now, 1);
    }
    const r = rec.result(11_000);
    expect(r.completed).toBe(5);
    expect(r.windowS).toBe(2);
    expect(r.totalS).toBe(10);
    // Three completions by the window's end, over its 2 s; the drain's do not count.
    expect(r.achievedRate).toBe(1.5);
  });

  it('gives the table its achieved rate and depth mean unrounded, so they are rounded once', () => {
    // 16 completions over 6.7095 s are 2.38468/s: 2.38. Rounded to 2.385 first, the table's
    // three figures then took it up to 2.39; a depth mean of 0.04995 (0.05) likewise showed as 0.1.
    const rec = new PhaseRecorder('bounded', 10, '10/s');
    rec.begin(0, 6709.5);
    for (let i = 0; i < 16; i++) {
      rec.sentOne(1);
      rec.completed(100, 1);
    }
    // 999 of 20,000 samples at depth 1: a mean of 0.04995.
    for (let i = 0; i < 20_000; i++) rec.sample(i * 0.3, i < 999 ? 1 : 0, 0);
    const phase = rec.result(7000);
    const row = formatTable(benchResult([phase]))
      .split('\n')[1]!
      .trim()
      .split(/\s{2,}/);
    expect([row[3], row[10]]).toEqual(['2.38', '0.0']);
    expect(phase.achievedRate).toBe(16 / 6.7095);
    expect(phase.depth.mean).toBe(999 / 20_000);
  });

  it('sorts every outcome by its code; settled counts them all', () => {
    const rec = new PhaseRecorder('bounded', 10, '10/s');
    rec.begin(0, 1000);
    for (let i = 0; i < 7; i++) rec.sentOne(3);
    rec.completed(10, 1);
    rec.failed(new RejectedError('requests', snapshot));
    rec.failed(new RejectedError('units', snapshot));
    rec.failed(new TooLargeError(20, 16));
    rec.failed(new DeadlineError());
    rec.failed(new TaskFailedError('boom'));
    rec.failed(new RangeError('no code')); // uncoded: sorted by its name
    expect(rec.sent).toBe(7);
    expect(rec.settled).toBe(7);
    const r = rec.result(1000);
    expect(r).toMatchObject({ sent: 7, sentUnits: 21, completed: 1, refused: 3, deadline: 1, failed: 2 });
    expect(r.refusedBy).toEqual({ requests: 1, units: 1, 'too-large': 1 });
    expect(r.failedBy).toEqual({ OMNI_ERR_TASK_FAILED: 1, RangeError: 1 });
  });

  it('samples cumulative counters, and takes depth statistics from the window only', () => {
    const rec = new PhaseRecorder('unbounded', 10, '10/s');
    rec.begin(100, 1000);
    rec.sentOne(1);
    rec.sentOne(1);
    rec.sample(100, 1, 0);
    rec.failed(new RejectedError('requests', snapshot));
    rec.sample(600, 3, 1);
    rec.failed(new DeadlineError());
    // t = 1000: the window's last instant, so its depth (the largest in the window) counts.
    rec.sample(1100, 5, 2);
    rec.completed(1300, 1); // after the window: still counted by the samples after it
    rec.sample(1600, 50, 0); // the drain: not part of the depth statistics
    const r = rec.result(1700);
    expect(r.timeline).toEqual([
      { t: 0, depth: 1, queued: 0, sent: 2, completed: 0, refused: 0, deadline: 0 },
      { t: 500, depth: 3, queued: 1, sent: 2, completed: 0, refused: 1, deadline: 0 },
      { t: 1000, depth: 5, queued: 2, sent: 2, completed: 0, refused: 1, deadline: 1 },
      { t: 1500, depth: 50, queued: 0, sent: 2, completed: 1, refused: 1, deadline: 1 },
    ]);
    expect(r.depth).toEqual({ mean: 3, max: 5 });
    expect(rec.lastSample?.t).toBe(1500);
  });

  it('takes depth statistics from every sample when none fell inside a window that short', () => {
    // --duration 0.0001: a window of hundredths of a millisecond ends before the first sample.
    const rec = new PhaseRecorder('unbounded', 10, '10/s');
    rec.begin(0, 0.01);
    rec.sample(5, 4, 0);
    rec.sample(10, 6, 0);
    expect(rec.result(10).depth).toEqual({ mean: 5, max: 6 });
  });

  it('summarizes a long phase: more depth samples than a call can take as arguments', () => {
    // 4 h of arrivals sampled every 100 ms (--duration 28800 --rates 50): 144,000 samples. The
    // depth max was Math.max(...depths), whose arguments overflow the stack past ~125,000.
    const samples = 144_000;
    const rec = new PhaseRecorder('bounded', 50, '50/s');
    rec.begin(0, samples * 100);
    for (let i = 0; i < samples; i++) rec.sample(i * 100, i === 77_777 ? 9 : i % 3, 0);
    // Depths 0, 1, 2 in turn average 1; one 2 made 9 adds 7: 144,007 / 144,000.
    expect(rec.result(samples * 100).depth).toEqual({ mean: 144_007 / 144_000, max: 9 });
  });

  it('reports the offered rate as resolved, so each phase matches its entry in results.json rates', () => {
    // 0.5x of a capacity of 1,091 completions in 0.75 s: rounded to 727.333, no phase equalled
    // its rate.
    for (const rate of [(1091 / 0.75) * 0.5, 1000 / 3, 0.0004]) {
      const rec = new PhaseRecorder('bounded', rate, '0.5x');
      rec.begin(0, 1000);
      expect(rec.result(1000).offeredRate).toBe(rate);
    }
  });

  it('reports no latency (null in results.json), not 0 ms or NaN, for a phase with no completions', () => {
    // A p99 of 0 ms read as the fastest phase of the run, where nothing was measured at all.
    const rec = new PhaseRecorder('bounded', 10, '10/s');
    rec.begin(0, 1000);
    rec.sample(0, 0, 0);
    rec.sentOne(4);
    rec.failed(new RejectedError('requests', snapshot));
    const r = rec.result(1000);
    const none = { count: 0, p50: null, p99: null, p999: null, max: null, mean: null };
    expect(r.latencyMs).toEqual(none);
    expect(JSON.parse(JSON.stringify(r)).latencyMs).toEqual(none);
    // Counts and rates are real zeros: nothing completed, depth sampled at 0.
    expect(r.depth).toEqual({ mean: 0, max: 0 });
    expect(r.achievedRate).toBe(0);
  });
});
