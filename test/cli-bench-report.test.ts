/**
 * The benchmark's report, in-process on a made-up result: the --json summary (every phase but
 * its timeline, with refusal and deadline shares of the requests sent) and the table's columns.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describe as describeRun, formatReport, formatTable, summarize } from '../src/cli/bench-report.js';
import type { PhaseResult } from '../src/cli/phase-recorder.js';
import { benchPhase, benchResult } from './fixtures/bench-result.js';

const result = (phases: PhaseResult[]) => benchResult(phases);

const low = benchPhase({});
const high = benchPhase({
  mode: 'bounded',
  offeredRate: 2000,
  rateLabel: '2x',
  sent: 3000,
  completed: 1000,
  refused: 1000,
  refusedBy: { requests: 600, units: 400 },
  deadline: 600,
  failed: 1,
  failedBy: { OMNI_ERR_TASK_FAILED: 1 },
  achievedRate: 1441.2,
  latencyMs: { count: 1000, p50: 9.97, p99: 22.71, p999: 123.4, max: 130, mean: 11 },
  depth: { mean: 13.06, max: 16 },
});
const idle = benchPhase({
  mode: 'bounded',
  completed: 0,
  refused: 1000,
  latencyMs: { count: 0, p50: null, p99: null, p999: null, max: null, mean: null },
});

/** The table's cells, row by row (cells are separated by two or more spaces). */
function cells(table: string): string[][] {
  return table.split('\n').map((line) => line.trim().split(/\s{2,}/));
}

describe('summarize (the --json summary)', () => {
  it('keeps every phase field but the timeline, adds refused and deadline % of sent, lists the files', () => {
    const r = result([low, high]);
    const s = summarize(r, ['/out/results.json']);
    expect(s.files).toEqual(['/out/results.json']);
    expect(s.rates).toEqual([500, 2000]);
    for (const p of s.phases) expect(p).not.toHaveProperty('timeline');
    const { timeline: _t, ...rest } = high;
    expect(s.phases[1]).toEqual({ ...rest, refusedPct: 33.33, deadlinePct: 20 });
    expect(s.phases[0]).toMatchObject({ refusedPct: 0, deadlinePct: 0 });
    // The result itself still has its timelines (results.json is written from it).
    expect(r.phases[0]!.timeline).toHaveLength(1);
  });

  it('rounds a share that lies halfway up, as every other: 57 of 800 (7.125 %) is 7.13', () => {
    // (57 / 800) * 10000 is the double just below 712.5, which Math.round took down.
    const pct = (refused: number, sent: number): number =>
      summarize(result([{ ...low, sent, completed: sent - refused, refused }]), []).phases[0]!.refusedPct;
    expect([pct(57, 800), pct(69, 800), pct(1, 8)]).toEqual([7.13, 8.63, 12.5]);
    const counts = fc
      .integer({ min: 1, max: 1_000_000 })
      .chain((whole) => fc.tuple(fc.integer({ min: 0, max: whole }), fc.constant(whole)));
    fc.assert(
      fc.property(counts, ([part, whole]) => {
        // Hundredths of a percent from exact integer arithmetic, halves up.
        expect(pct(part, whole)).toBe(Math.floor((20_000 * part + whole) / (2 * whole)) / 100);
      }),
      { numRuns: 2000 },
    );
  });

  it('gives 0 %, not NaN, for a phase that sent nothing', () => {
    const s = summarize(result([benchPhase({ sent: 0, completed: 0 })]), []);
    expect(s.phases[0]).toMatchObject({ refusedPct: 0, deadlinePct: 0 });
  });
});

describe('formatTable', () => {
  it('one row per phase, each number in its column', () => {
    const rows = cells(formatTable(result([low, high, idle])));
    expect(rows[0]).toEqual([
      'mode',
      'offered/s',
      'load',
      'achieved/s',
      'p50 ms',
      'p99 ms',
      'p99.9 ms',
      'refused %',
      'deadline %',
      'failed',
      'depth mean',
      'depth max',
    ]);
    expect(rows[1]).toEqual([
      'unbounded',
      '500',
      '0.5x',
      '400',
      '2.57',
      '8.21',
      '14.3',
      '0.0',
      '0.0',
      '0',
      '0.9',
      '6',
    ]);
    expect(rows[2]).toEqual([
      'bounded',
      '2000',
      '2x',
      '1441',
      '9.97',
      '22.7',
      '123',
      '33.3',
      '20.0',
      '1',
      '13.1',
      '16',
    ]);
    // No completions: no latency to show.
    expect(rows[3]!.slice(4, 7)).toEqual(['-', '-', '-']);
  });

  it('rounds the refused and deadline shares once, from the counts', () => {
    // 1 of 2,010 is 0.0498 %: 0.0 to one decimal. Rounded to two decimals first (0.05), it
    // showed as 0.1; 0.0502 % likewise. The --json summary keeps its two decimals.
    const rare = { ...low, sent: 2010, completed: 2008, refused: 1, deadline: 1 };
    expect(cells(formatTable(result([rare])))[1]!.slice(7, 9)).toEqual(['0.0', '0.0']);
    expect(summarize(result([rare]), []).phases[0]).toMatchObject({ refusedPct: 0.05, deadlinePct: 0.05 });
    const justOver = { ...low, sent: 1990, completed: 1988, refused: 1, deadline: 1 };
    expect(cells(formatTable(result([justOver])))[1]!.slice(7, 9)).toEqual(['0.1', '0.1']);
  });

  it('rounds a share that lies halfway up, as every other: 3 of 2,000 (0.15 %) is 0.2, as 1 of 2,000 is 0.1', () => {
    // 100 * 3 / 2000 is the double just below 0.15, which toFixed(1) took down to 0.1.
    const share = (refused: number, sent: number): string =>
      cells(formatTable(result([{ ...low, sent, completed: sent - refused, refused }])))[1]![7]!;
    expect([share(1, 2000), share(3, 2000), share(7, 2000), share(7, 200)]).toEqual([
      '0.1',
      '0.2',
      '0.4',
      '3.5',
    ]);
    // Against exact integer arithmetic: tenths of a percent, halves rounded up.
    const exact = (part: number, whole: number): string => {
      const tenths = Math.floor((2000 * part + whole) / (2 * whole));
      return `${Math.floor(tenths / 10)}.${tenths % 10}`;
    };
    const counts = fc
      .integer({ min: 1, max: 1_000_000 })
      .chain((whole) => fc.tuple(fc.integer({ min: 0, max: whole }), fc.constant(whole)));
    fc.assert(
      fc.property(counts, ([part, whole]) => {
        expect(share(part, whole)).toBe(exact(part, whole));
      }),
      { numRuns: 2000 },
    );
  });

  it('shows rates below 100/s with three significant figures, not rounded to whole requests', () => {
    // A slow layer (capacity 1.3/s): 0.5x offers 0.65/s; a whole number showed it as 1, and its
    // achieved 0.4/s as 0. From 100/s up, whole requests are three figures or more.
    const slow = { ...low, offeredRate: 0.65, achievedRate: 0.4 };
    const mid = { ...low, offeredRate: 32.5, achievedRate: 9.876 };
    const rows = cells(formatTable(result([slow, mid, high])));
    expect([rows[1]![1], rows[1]![3]]).toEqual(['0.650', '0.400']);
    expect([rows[2]![1], rows[2]![3]]).toEqual(['32.5', '9.88']);
    expect([rows[3]![1], rows[3]![3]]).toEqual(['2000', '1441']);
    const capacity = (c: number): string | undefined =>
      describeRun(benchResult([low], { calibration: { ...benchResult([]).calibration, capacity: c } }))
        .split('\n')
        .find((l) => l.startsWith('capacity:'));
    expect(capacity(1.3)).toMatch(/^capacity: 1\.30 req\/s /);
    expect(capacity(1153.4)).toMatch(/^capacity: 1153 req\/s /);
  });

  it('shows sub-millisecond latencies to the microsecond', () => {
    const fast = { ...low, latencyMs: { count: 10, p50: 0.073, p99: 0.5, p999: 1.004, max: 2, mean: 0.1 } };
    const rows = cells(formatTable(result([fast])));
    expect(rows[1]!.slice(4, 7)).toEqual(['0.073', '0.500', '1.00']);
  });

  it('aligns numbers right and the mode and load columns left', () => {
    const lines = formatTable(result([low, high])).split('\n');
    // "2x" sits under the left edge of "load", "0.5x" fills it.
    const loadAt = lines[0]!.indexOf('load');
    expect(lines[2]!.slice(loadAt, loadAt + 4)).toBe('2x  ');
    expect(lines[1]!.slice(loadAt, loadAt + 4)).toBe('0.5x');
    // The right edges of the numeric columns line up with their headers'.
    const p99End = lines[0]!.indexOf('p99 ms') + 'p99 ms'.length;
    expect(lines[1]!.slice(p99End - 4, p99End)).toBe('8.21');
    expect(lines[2]!.slice(p99End - 4, p99End)).toBe('22.7');
  });
});

describe('describe (the header over the table)', () => {
  it('names every setting the run used, each where it belongs', () => {
    // Every value distinct, so a header that showed one in another's place is seen.
    const r = benchResult([low], {
      threads: 3,
      cpus: 5,
      deadlineMs: 750,
      phaseS: 1.25,
      seed: 42,
      layer: { inFeatures: 64, outFeatures: 32, op: 'y = GELU(x W^T + b)' },
      cost: { unit: 'rows', distribution: 'uniform', min: 1, max: 12 },
      bounds: { requests: 7, units: 56 },
      calibration: { seconds: 0.5, concurrency: 12, completed: 300, calls: 420, capacity: 800.4 },
    });
    const lines = describeRun(r).split('\n');
    expect(lines).toHaveLength(6);
    expect(lines[0]).toContain(
      'backend fixture (requested), 3 worker thread(s) per runtime, 5 CPU(s), Node v20.20.0',
    );
    expect(lines[1]).toContain('64 -> 32; cost = rows per request, uniform in 1..12 (seeded, seed 42)');
    expect(lines[2]).toContain('every request has a 750 ms deadline');
    expect(lines[3]).toBe('capacity: 800 req/s (closed loop, 12 outstanding, 0.5 s)');
    expect(lines[4]).toContain('bounded = admission { requests: 7, units: 56 }');
    expect(lines[5]).toContain('each phase offers load for 1.25 s, then drains');
  });

  it('says how long a short phase offers load, to three figures, not 0.00 s', () => {
    // --duration 0.032 over four rates: 4 ms phases, which two decimals showed as 0.00 s.
    const lines = describeRun(benchResult([low], { durationS: 0.032, phaseS: 0.004 })).split('\n');
    expect(lines[5]).toContain('each phase offers load for 0.004 s, then drains');
    const long = describeRun(benchResult([low], { durationS: 2400, phaseS: 300 })).split('\n');
    expect(long[5]).toContain('each phase offers load for 300 s, then drains');
  });
});

describe('formatReport', () => {
  it('says what was measured, then the table, then where the files went', () => {
    const r = result([low, high]);
    const text = formatReport(r, ['/out/results.json', '/out/latency.svg']);
    expect(text.startsWith(describeRun(r))).toBe(true);
    expect(text).toContain(formatTable(r));
    expect(describeRun(r)).toContain('capacity: 1153 req/s');
    expect(text.trimEnd().split('\n').at(-1)).toBe('written: /out/results.json, /out/latency.svg');
  });
});
