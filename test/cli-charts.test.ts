/**
 * The chart specs, in-process on a made-up result: which numbers each chart plots (the SVGs
 * themselves are checked end to end in cli-bench.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { CHART_FILES, charts, latencySpec, throughputSpec, timelineSpec } from '../src/cli/charts.js';
import type { PhaseResult, Sample } from '../src/cli/phase-recorder.js';
import { benchResult } from './fixtures/bench-result.js';

function sample(t: number, depth: number, refused: number, deadline: number): Sample {
  return { t, depth, queued: 0, sent: 0, completed: 0, refused, deadline };
}

function phase(
  mode: 'unbounded' | 'bounded',
  offeredRate: number,
  rateLabel: string,
  extra: Partial<PhaseResult>,
) {
  return {
    mode,
    offeredRate,
    rateLabel,
    windowS: 2.5,
    totalS: 3,
    sent: 100,
    sentUnits: 800,
    completed: 90,
    refused: 5,
    refusedBy: {},
    deadline: 5,
    failed: 0,
    failedBy: {},
    achievedRate: offeredRate * 0.9,
    latencyMs: { count: 90, p50: 1, p99: 2, p999: 3, max: 4, mean: 1.5 },
    depth: { mean: 1, max: 2 },
    timeline: [sample(0, 1, 0, 0)],
    ...extra,
  } satisfies PhaseResult;
}

const phases: PhaseResult[] = [
  phase('unbounded', 500, '0.5x', {
    latencyMs: { count: 9, p50: 2.5, p99: 8.2, p999: 14.3, max: 15, mean: 3 },
  }),
  phase('bounded', 500, '0.5x', {
    latencyMs: { count: 0, p50: null, p99: null, p999: null, max: null, mean: null },
  }),
  phase('unbounded', 2000, '2x', {
    achievedRate: 950,
    latencyMs: { count: 9, p50: 540, p99: 1001, p999: 1003, max: 1004, mean: 600 },
    timeline: [sample(0, 3, 0, 0), sample(1500, 700, 0, 12)],
  }),
  phase('bounded', 2000, '2x', {
    achievedRate: 1441,
    latencyMs: { count: 9, p50: 9.97, p99: 22.7, p999: 28.3, max: 30, mean: 11 },
    timeline: [sample(0, 2, 1, 0), sample(1500, 16, 40, 0)],
  }),
];

// A deadline and a capacity unlike the fixture's defaults, so the charts are seen to use them.
const result = benchResult(phases, {
  deadlineMs: 750,
  phaseS: 1.25,
  calibration: { seconds: 1, concurrency: 8, completed: 750, calls: 1008, capacity: 1000.4 },
});

interface Layer {
  data?: { values: Array<Record<string, unknown>> };
  layer?: Layer[];
  encoding?: Record<string, unknown>;
}
interface Spec extends Layer {
  title: { text: string; subtitle: string };
  vconcat?: Layer[];
}
const spec = (s: unknown): Spec => s as Spec;

describe('chart specs', () => {
  it('latency: p50, p99 and p99.9 of every phase with completions, and the deadline rule', () => {
    const s = spec(latencySpec(result));
    const [lines, deadline] = s.layer!;
    expect(lines!.data!.values).toEqual([
      { offered: 500, mode: 'unbounded', percentile: 'p50', latencyMs: 2.5 },
      { offered: 500, mode: 'unbounded', percentile: 'p99', latencyMs: 8.2 },
      { offered: 500, mode: 'unbounded', percentile: 'p99.9', latencyMs: 14.3 },
      { offered: 2000, mode: 'unbounded', percentile: 'p50', latencyMs: 540 },
      { offered: 2000, mode: 'unbounded', percentile: 'p99', latencyMs: 1001 },
      { offered: 2000, mode: 'unbounded', percentile: 'p99.9', latencyMs: 1003 },
      { offered: 2000, mode: 'bounded', percentile: 'p50', latencyMs: 9.97 },
      { offered: 2000, mode: 'bounded', percentile: 'p99', latencyMs: 22.7 },
      { offered: 2000, mode: 'bounded', percentile: 'p99.9', latencyMs: 28.3 },
    ]);
    // The deadline is drawn on the same (millisecond) axis as the latencies.
    expect(deadline!.data!.values).toEqual([{ y: 750, label: 'deadline' }]);
    expect(s.title.subtitle).toBe('completed requests; deadline 750 ms; backend fixture');
  });

  it('throughput: achieved against offered per phase, and the achieved = offered diagonal', () => {
    const s = spec(throughputSpec(result));
    const [diagonal, points] = s.layer!;
    expect(diagonal!.data!.values).toEqual([
      { offered: 0, achieved: 0 },
      { offered: 2000, achieved: 2000 },
    ]);
    expect(points!.data!.values).toEqual([
      { offered: 500, achieved: 450, mode: 'unbounded' },
      { offered: 500, achieved: 450, mode: 'bounded' },
      { offered: 2000, achieved: 950, mode: 'unbounded' },
      { offered: 2000, achieved: 1441, mode: 'bounded' },
    ]);
    expect(s.title.subtitle).toContain('1000 req/s');
  });

  it('timeline: the highest offered load only, in seconds, refusals and deadline misses apart', () => {
    const s = spec(timelineSpec(result));
    expect(s.title.text).toBe('Depth and refusals over time at 2000 req/s (2x)');
    expect(s.title.subtitle).toBe('arrivals stop at 1.25 s, then the phase drains');
    expect(s.data!.values).toEqual([
      { t: 0, mode: 'unbounded', depth: 3, outcome: 'refused', count: 0 },
      { t: 0, mode: 'unbounded', depth: 3, outcome: 'deadline missed', count: 0 },
      { t: 1.5, mode: 'unbounded', depth: 700, outcome: 'refused', count: 0 },
      { t: 1.5, mode: 'unbounded', depth: 700, outcome: 'deadline missed', count: 12 },
      { t: 0, mode: 'bounded', depth: 2, outcome: 'refused', count: 1 },
      { t: 0, mode: 'bounded', depth: 2, outcome: 'deadline missed', count: 0 },
      { t: 1.5, mode: 'bounded', depth: 16, outcome: 'refused', count: 40 },
      { t: 1.5, mode: 'bounded', depth: 16, outcome: 'deadline missed', count: 0 },
    ]);
  });

  it("names a slow layer's rates with three significant figures, not rounded to whole requests", () => {
    const slow = benchResult([phase('unbounded', 0.65, '0.5x', {}), phase('bounded', 0.65, '0.5x', {})], {
      rates: [0.65],
      calibration: { seconds: 1, concurrency: 8, completed: 1, calls: 9, capacity: 1.3 },
    });
    expect(spec(throughputSpec(slow)).title.subtitle).toBe('calibrated capacity 1.30 req/s');
    expect(spec(timelineSpec(slow)).title.text).toBe('Depth and refusals over time at 0.650 req/s (0.5x)');
  });

  it("throughput: a slow layer's diagonal ends at its highest offered load, not at 1/s", () => {
    // Below 1/s the diagonal ran on to (1, 1): the axes stretched past every phase.
    const slow = benchResult([phase('unbounded', 0.65, '0.5x', {}), phase('bounded', 0.65, '0.5x', {})], {
      rates: [0.65],
      calibration: { seconds: 1, concurrency: 8, completed: 1, calls: 9, capacity: 1.3 },
    });
    expect(spec(throughputSpec(slow)).layer![0]!.data!.values).toEqual([
      { offered: 0, achieved: 0 },
      { offered: 0.65, achieved: 0.65 },
    ]);
  });

  it('timeline: says when a short phase stops arriving, to three figures, not 0.00 s', () => {
    const short = benchResult(result.phases, { phaseS: 0.004 });
    expect(spec(timelineSpec(short)).title.subtitle).toBe('arrivals stop at 0.004 s, then the phase drains');
  });

  it('charts(): one spec per chart file, in CHART_FILES order', () => {
    const all = charts(result);
    expect(all.map((c) => c.file)).toEqual([...CHART_FILES]);
    expect(CHART_FILES).toEqual(['latency.svg', 'throughput.svg', 'timeline.svg']);
    expect(all.map((c) => spec(c.spec).title.text)).toEqual([
      'Latency vs offered load',
      'Throughput vs offered load',
      'Depth and refusals over time at 2000 req/s (2x)',
    ]);
  });
});
