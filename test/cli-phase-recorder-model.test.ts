/**
 * PhaseRecorder against an independent count of the same outcomes (fast-check): every figure
 * results.json gets for a phase is recomputed here from the raw events (nearest-rank
 * percentiles of a sorted list, completions within the window, depth of the window's samples)
 * and must agree, within HdrHistogram's three significant digits where it is involved.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PhaseRecorder } from '../src/cli/phase-recorder.js';
import { DeadlineError, RejectedError, TaskFailedError, TooLargeError } from '../src/errors.js';

const snapshot = { depth: 1, capacity: 1, rejected: 1 };
/** Window lengths that completions and samples also land on exactly: the window's last instant. */
const EDGES = [100, 500, 1000, 2000];

type Outcome =
  | { kind: 'completed'; at: number; latencyUs: number }
  | { kind: 'refused'; reason: 'requests' | 'units' | 'too-large' }
  | { kind: 'deadline' }
  | { kind: 'failed'; code: 'OMNI_ERR_TASK_FAILED' | 'Error' };

const outcome: fc.Arbitrary<Outcome> = fc.oneof(
  fc.record({
    kind: fc.constant('completed' as const),
    at: fc.oneof(fc.integer({ min: 0, max: 3000 }), fc.constantFrom(...EDGES)),
    // Whole microseconds, from 1 us to 20 s: what the recorder keeps, so nothing is rounded here.
    latencyUs: fc.oneof(fc.integer({ min: 1, max: 2000 }), fc.integer({ min: 1, max: 20_000_000 })),
  }),
  fc.record({
    kind: fc.constant('refused' as const),
    reason: fc.constantFrom('requests' as const, 'units' as const, 'too-large' as const),
  }),
  fc.record({ kind: fc.constant('deadline' as const) }),
  fc.record({
    kind: fc.constant('failed' as const),
    code: fc.constantFrom('OMNI_ERR_TASK_FAILED' as const, 'Error' as const),
  }),
);

/** The nearest-rank percentile of sorted values: the smallest with at least p % at or below it. */
function nearestRank(sorted: readonly number[], p: number): number {
  return sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1]!;
}

function settle(rec: PhaseRecorder, o: Outcome, start: number): void {
  if (o.kind === 'completed') rec.completed(start + o.at, o.latencyUs / 1000);
  else if (o.kind === 'refused') {
    rec.failed(o.reason === 'too-large' ? new TooLargeError(20, 16) : new RejectedError(o.reason, snapshot));
  } else if (o.kind === 'deadline') rec.failed(new DeadlineError());
  else rec.failed(o.code === 'Error' ? new Error('no code') : new TaskFailedError('boom'));
}

describe('PhaseRecorder against an independent count', () => {
  it('counts, shares, achieved rate, percentiles and depth agree with the raw events', () => {
    const phase = fc.record({
      start: fc.integer({ min: 0, max: 10_000 }),
      windowMs: fc.oneof(fc.integer({ min: 1, max: 2000 }), fc.constantFrom(...EDGES)),
      outcomes: fc.array(fc.tuple(outcome, fc.integer({ min: 1, max: 16 })), { maxLength: 300 }),
      samples: fc.array(
        fc.tuple(fc.oneof(fc.integer({ min: 0, max: 3000 }), fc.constantFrom(...EDGES)), fc.nat(50)),
        { maxLength: 60 },
      ),
    });
    fc.assert(
      fc.property(phase, ({ start, windowMs, outcomes, samples }) => {
        const rec = new PhaseRecorder('bounded', 100, '100/s');
        rec.begin(start, windowMs);
        for (const [, rows] of outcomes) rec.sentOne(rows);
        for (const [o] of outcomes) settle(rec, o, start);
        for (const [t, depth] of samples.toSorted((a, b) => a[0] - b[0])) rec.sample(start + t, depth, 0);
        const r = rec.result(start + 3000);

        const done = outcomes.map(([o]) => o);
        const completed = done.filter((o) => o.kind === 'completed');
        const count = (kind: Outcome['kind']) => done.filter((o) => o.kind === kind).length;
        expect(r.sent).toBe(outcomes.length);
        expect(r.sentUnits).toBe(outcomes.reduce((a, [, rows]) => a + rows, 0));
        expect([r.completed, r.refused, r.deadline, r.failed]).toEqual([
          completed.length,
          count('refused'),
          count('deadline'),
          count('failed'),
        ]);
        expect(r.completed + r.refused + r.deadline + r.failed).toBe(r.sent);
        const inWindow = completed.filter((o) => o.at <= windowMs).length;
        expect(r.achievedRate).toBeCloseTo(inWindow / (windowMs / 1000), 3);

        const latencies = completed.map((o) => o.latencyUs).toSorted((a, b) => a - b);
        expect(r.latencyMs.count).toBe(latencies.length);
        if (latencies.length === 0) {
          expect(r.latencyMs).toMatchObject({ p50: null, p99: null, p999: null, max: null, mean: null });
        } else {
          const max = latencies.at(-1)!;
          expect(r.latencyMs.max).toBe(Math.round(max) / 1000);
          for (const [key, p] of [
            ['p50', 50],
            ['p99', 99],
            ['p999', 99.9],
          ] as const) {
            const exact = nearestRank(latencies, p);
            const shown = r.latencyMs[key]! * 1000;
            // HdrHistogram answers with its bucket's top (< 0.1 % above), capped at the max.
            expect(shown, key).toBeGreaterThanOrEqual(exact - 0.5);
            expect(shown, key).toBeLessThanOrEqual(Math.min(max, exact * 1.001) + 0.5);
          }
        }

        const window = samples.filter(([t]) => t <= windowMs).map(([, d]) => d);
        const depths = window.length > 0 ? window : samples.map(([, d]) => d);
        const mean = depths.length === 0 ? 0 : depths.reduce((a, b) => a + b, 0) / depths.length;
        expect(r.depth.mean).toBeCloseTo(mean, 3);
        expect(r.depth.max).toBe(depths.reduce((a, b) => Math.max(a, b), 0));
      }),
      { numRuns: 300 },
    );
  });
});
