/**
 * The load generator on a fake runtime and a fake clock (vitest's fake timers drive setTimeout,
 * setInterval and performance.now), so its schedule is checked exactly, with no real time:
 * the seeded arrivals of the window and nothing else, catch-up after a stalled event loop,
 * latency and deadline from each arrival's scheduled time, the drain, and the calibration.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { calibrate, openLoop, repeatCalls, SEND_AHEAD_MS, type Workload } from '../src/cli/load-generator.js';
import { PhaseRecorder } from '../src/cli/phase-recorder.js';
import { type Arrival, ArrivalProcess, Prng } from '../src/cli/prng.js';
import { DeadlineError } from '../src/errors.js';
import type { LinearRuntime } from '../src/linear/linear-runtime.js';

const MAX_ROWS = 8;
const work: Workload = {
  inputs: Array.from({ length: MAX_ROWS }, (_, i) => new Float32Array(i + 1)),
  maxRows: MAX_ROWS,
};

interface Call {
  sentAt: number;
  rows: number;
  deadlineMs: number | undefined;
}

/** How the fake runtime treats one call sent at `sentAt`. */
interface Behaviour {
  /** When the work ends (depth goes down); undefined: never. */
  workEndsAt(sentAt: number, rows: number): number | undefined;
  /** When the caller's promise settles, and how; undefined: never. */
  callerSettlesAt?(sentAt: number, workEnd: number | undefined): { at: number; error?: Error } | undefined;
}

/** Runs `fn` after `ms` of fake time; at once (in a microtask) for 0. */
function later(ms: number, fn: () => void): void {
  if (ms === 0) queueMicrotask(fn);
  else setTimeout(fn, ms);
}

function fakeRuntime(behaviour: Behaviour) {
  const calls: Call[] = [];
  let depth = 0;
  let lastWorkEnd = 0;
  const lr = {
    run(x: Float32Array, opts: { rows: number; deadlineMs?: number }): Promise<Float32Array> {
      const sentAt = performance.now();
      expect(x.length).toBe(opts.rows);
      calls.push({ sentAt, rows: opts.rows, deadlineMs: opts.deadlineMs });
      depth++;
      const workEnd = behaviour.workEndsAt(sentAt, opts.rows);
      if (workEnd !== undefined) {
        later(workEnd - sentAt, () => {
          depth--;
          lastWorkEnd = Math.max(lastWorkEnd, performance.now());
        });
      }
      const settle =
        behaviour.callerSettlesAt?.(sentAt, workEnd) ?? (workEnd === undefined ? undefined : { at: workEnd });
      return new Promise((resolve, reject) => {
        if (settle === undefined) return;
        later(settle.at - sentAt, () => (settle.error ? reject(settle.error) : resolve(x)));
      });
    },
    report: () => ({ depth, queued: 0 }),
  };
  return {
    lr: lr as unknown as LinearRuntime,
    calls,
    depth: () => depth,
    lastWorkEnd: () => lastWorkEnd,
  };
}

/** The arrivals the seeded process schedules inside the window. */
function expectedArrivals(seed: number, rate: number, windowMs: number): Arrival[] {
  const process = new ArrivalProcess(seed, rate, MAX_ROWS);
  const out: Arrival[] = [];
  for (let a = process.next(); a.at < windowMs; a = process.next()) out.push(a);
  return out;
}

/** Makes performance.now() jump by `ms` at fake time `at`: the event loop was blocked that long. */
let lag = 0;
function stallAt(at: number, ms: number): void {
  setTimeout(() => {
    lag += ms;
  }, at - performance.now());
}

/** A fresh fake clock (the same one every time), with performance.now() open to stalls. */
function installClock(): void {
  vi.useFakeTimers();
  // Start away from 0, so "since the phase began" and "since the clock began" differ.
  vi.advanceTimersByTime(1000);
  lag = 0;
  const fakeNow = performance.now.bind(performance);
  vi.spyOn(performance, 'now').mockImplementation(() => fakeNow() + lag);
}
function uninstallClock(): void {
  vi.restoreAllMocks();
  vi.useRealTimers();
}
beforeEach(installClock);
afterEach(uninstallClock);

async function runPhase(
  lr: LinearRuntime,
  plan: { rate: number; windowMs: number; seed: number; deadlineMs: number },
  advanceMs: number,
) {
  const rec = new PhaseRecorder('bounded', plan.rate, `${plan.rate}/s`);
  const start = performance.now();
  let end: number | undefined;
  const done = openLoop(lr, work, { ...plan, sampleMs: 10 }, rec).then((t) => {
    end = t;
    return t;
  });
  await vi.advanceTimersByTimeAsync(advanceMs);
  expect(end, 'the phase has drained').toBeDefined();
  await done;
  return { rec, start, end: end!, result: rec.result(end!) };
}

describe('openLoop', () => {
  it('sends exactly the seeded arrivals of the window, with their rows, never more than SEND_AHEAD_MS early', async () => {
    const rt = fakeRuntime({ workEndsAt: (t) => t + 2 });
    const plan = { rate: 1000, windowMs: 200, seed: 5, deadlineMs: 1000 };
    const { start, end, result } = await runPhase(rt.lr, plan, 1000);
    const expected = expectedArrivals(5, 1000, 200);
    expect(expected.length).toBeGreaterThan(100);
    expect(rt.calls.map((c) => c.rows)).toEqual(expected.map((a) => a.rows));
    rt.calls.forEach((c, i) => {
      expect(c.sentAt - start).toBeGreaterThanOrEqual(expected[i]!.at - SEND_AHEAD_MS);
    });
    expect(result).toMatchObject({
      sent: expected.length,
      sentUnits: expected.reduce((sum, a) => sum + a.rows, 0),
      completed: expected.length,
      refused: 0,
      deadline: 0,
      failed: 0,
      windowS: 0.2,
    });
    expect(result.timeline[0]!.t).toBe(0);
    expect(result.totalS).toBeCloseTo((end - start) / 1000, 3);
  });

  it('"sent it up to 1 ms ahead" (README, Benchmarks): some requests go a whole 1 ms early, none more', async () => {
    const rt = fakeRuntime({ workEndsAt: (t) => t + 2 });
    const plan = { rate: 1000, windowMs: 200, seed: 5, deadlineMs: 1000 };
    const { start } = await runPhase(rt.lr, plan, 1000);
    const expected = expectedArrivals(5, 1000, 200);
    const early = rt.calls.map((c, i) => expected[i]!.at - (c.sentAt - start));
    expect(Math.max(...early)).toBeLessThanOrEqual(1);
    expect(early.filter((ms) => ms > 0.9).length).toBeGreaterThan(0);
  });

  it("does not count the timers' whole-millisecond lateness as latency", async () => {
    // Node's timers fire on whole milliseconds, never sooner than 1 ms: a timer for an arrival's
    // exact due time sends it up to a millisecond late, and that was reported as latency.
    const fakeSetTimeout = globalThis.setTimeout;
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) =>
      fakeSetTimeout(fn, Math.max(1, Math.ceil(ms ?? 0)))) as typeof setTimeout);
    // Work that ends at once: any latency left is the generator's own.
    const rt = fakeRuntime({ workEndsAt: (t) => t });
    const plan = { rate: 2000, windowMs: 200, seed: 7, deadlineMs: 1000 };
    const { start, result } = await runPhase(rt.lr, plan, 1000);
    const expected = expectedArrivals(7, 2000, 200);
    expect(rt.calls).toHaveLength(expected.length);
    rt.calls.forEach((c, i) => {
      expect(c.sentAt - start).toBeGreaterThanOrEqual(expected[i]!.at - SEND_AHEAD_MS);
      expect(c.deadlineMs).toBe(plan.deadlineMs);
    });
    // HdrHistogram's floor is 1 us: nothing above it.
    expect(result.latencyMs.max).toBeLessThanOrEqual(0.001);
  });

  it('times a request sent ahead of its due time from its send: work of 5 ms is 5 ms of latency', async () => {
    // With no stall every request goes out up to SEND_AHEAD_MS before it is due; timed from its
    // due time instead, its latency would read less than the work it waited for.
    const rt = fakeRuntime({ workEndsAt: (t) => t + 5 });
    const plan = { rate: 1000, windowMs: 200, seed: 5, deadlineMs: 1000 };
    const { start, result } = await runPhase(rt.lr, plan, 1000);
    const expected = expectedArrivals(5, 1000, 200);
    expect(rt.calls.some((c, i) => c.sentAt < start + expected[i]!.at)).toBe(true);
    expect(result.completed).toBe(expected.length);
    for (const x of [result.latencyMs.p50, result.latencyMs.max, result.latencyMs.mean]) {
      expect(x).toBeGreaterThanOrEqual(5 * 0.999);
      expect(x).toBeLessThanOrEqual(5 * 1.001);
    }
  });

  it('samples the runtime from the first arrival on: depth and queue as reported, onSample after each', async () => {
    const rt = fakeRuntime({ workEndsAt: (t) => t + 30 });
    const report = rt.lr.report.bind(rt.lr);
    // A queue distinct from the depth, so a sample that took one for the other is seen.
    vi.spyOn(rt.lr, 'report').mockImplementation(() => {
      const r = report();
      return { ...r, queued: r.depth * 10 + 1 };
    });
    const rec = new PhaseRecorder('unbounded', 500, 'x');
    const seen: Array<number | undefined> = [];
    const plan = { rate: 500, windowMs: 50, seed: 3, deadlineMs: 1000, sampleMs: 10 };
    const done = openLoop(rt.lr, work, { ...plan, onSample: () => seen.push(rec.lastSample?.t) }, rec);
    await vi.advanceTimersByTimeAsync(1000);
    const end = await done;
    // Drained, the phase stops sampling: no timer left to grow its timeline or hold the process.
    expect(vi.getTimerCount()).toBe(0);
    const { timeline } = rec.result(end);
    expect(timeline.length).toBeGreaterThan(5);
    expect(seen).toEqual(timeline.map((s) => s.t));
    expect(timeline.some((s) => s.depth > 0)).toBe(true);
    for (const s of timeline) expect(s.queued).toBe(s.depth * 10 + 1);
  });

  it('catches up after a stall; latency and deadline run from each arrival scheduled time', async () => {
    // Work that ends at once: each latency is exactly how late its request went out.
    const rt = fakeRuntime({ workEndsAt: (t) => t });
    const plan = { rate: 1000, windowMs: 100, seed: 9, deadlineMs: 1000 };
    stallAt(performance.now() + 20, 30);
    const { start, result } = await runPhase(rt.lr, plan, 1000);
    const expected = expectedArrivals(9, 1000, 100);
    // Nothing dropped: every arrival due during the stall goes out after it.
    expect(rt.calls).toHaveLength(expected.length);
    // Sent ahead of its due time (SEND_AHEAD_MS) is not late: it starts when sent.
    const late = rt.calls.map((c, i) => Math.max(0, c.sentAt - (start + expected[i]!.at)));
    const worst = Math.max(...late);
    expect(worst).toBeGreaterThan(20);
    // Each request's deadline is what is left of it at its due time.
    rt.calls.forEach((c, i) => {
      expect(c.deadlineMs).toBeDefined();
      expect(c.deadlineMs! + late[i]!).toBeCloseTo(plan.deadlineMs, 6);
    });
    // Latency from the due time: the worst is the stall's (HdrHistogram: 3 digits).
    expect(result.latencyMs.max).toBeGreaterThanOrEqual(worst * 0.999);
    expect(result.latencyMs.max).toBeLessThanOrEqual(worst * 1.001);
    const median = late.toSorted((a, b) => a - b)[late.length >> 1]!;
    expect(result.latencyMs.p50).toBeCloseTo(median, 0);
    expect(result.completed).toBe(expected.length);
  });

  it('does not send a request whose deadline passed before it could go: a deadline miss', async () => {
    const rt = fakeRuntime({ workEndsAt: (t) => t + 1 });
    const plan = { rate: 1000, windowMs: 100, seed: 9, deadlineMs: 10 };
    stallAt(performance.now() + 20, 30);
    const { result } = await runPhase(rt.lr, plan, 1000);
    expect(result.deadline).toBeGreaterThan(0);
    expect(rt.calls.length + result.deadline).toBe(result.sent);
    expect(result.sent).toBe(expectedArrivals(9, 1000, 100).length);
    expect(result.failed).toBe(0);
    for (const c of rt.calls) expect(c.deadlineMs).toBeGreaterThan(0);
  });

  it('counts a request with no time left at all (exactly 0 ms) as a deadline miss', async () => {
    // The fake clock repeats exactly: learn how late the latest request goes out after a stall,
    // then give every request exactly that deadline: that one has 0 ms left when it is sent.
    const plan = { rate: 1000, windowMs: 100, seed: 9, deadlineMs: 1000 };
    const first = fakeRuntime({ workEndsAt: (t) => t });
    stallAt(performance.now() + 20, 30);
    const { start } = await runPhase(first.lr, plan, 1000);
    const expected = expectedArrivals(9, 1000, 100);
    const late = first.calls.map((c, i) => c.sentAt - (start + expected[i]!.at));
    const worst = Math.max(...late);
    expect(late.filter((x) => x === worst)).toHaveLength(1);

    uninstallClock();
    installClock();
    const second = fakeRuntime({ workEndsAt: (t) => t });
    stallAt(performance.now() + 20, 30);
    const { result } = await runPhase(second.lr, { ...plan, deadlineMs: worst }, 1000);
    expect(result.sent).toBe(expected.length);
    expect(result.deadline).toBe(1);
    expect(second.calls).toHaveLength(expected.length - 1);
    for (const c of second.calls) expect(c.deadlineMs).toBeGreaterThan(0);
  });

  it('drains: resolves only when the runtime is empty, even after every caller gave up', async () => {
    // Callers are told "deadline" after 5 ms; the work itself holds its capacity for 50 ms.
    const rt = fakeRuntime({
      workEndsAt: (t) => t + 50,
      callerSettlesAt: (t) => ({ at: t + 5, error: new DeadlineError() }),
    });
    let depthAtEnd = -1;
    const plan = { rate: 500, windowMs: 50, seed: 3, deadlineMs: 1000 };
    const { end, result } = await runPhase(rt.lr, plan, 1000);
    depthAtEnd = rt.depth();
    expect(result.deadline).toBe(result.sent);
    expect(depthAtEnd).toBe(0);
    expect(end).toBeGreaterThanOrEqual(rt.lastWorkEnd());
  });

  it('drains: resolves only when every caller has settled, even once the runtime is empty', async () => {
    const rt = fakeRuntime({
      workEndsAt: (t) => t + 2,
      callerSettlesAt: (t) => ({ at: t + 40 }),
    });
    const plan = { rate: 500, windowMs: 50, seed: 3, deadlineMs: 1000 };
    const rec = new PhaseRecorder('bounded', plan.rate, 'x');
    let settledAtEnd = -1;
    const done = openLoop(rt.lr, work, { ...plan, sampleMs: 10 }, rec).then(() => {
      settledAtEnd = rec.settled;
    });
    await vi.advanceTimersByTimeAsync(1000);
    await done;
    expect(rec.sent).toBeGreaterThan(0);
    expect(settledAtEnd).toBe(rec.sent);
  });

  // The drain limit is the window + 60 s + 10 deadlines: a phase that cannot drain fails then,
  // and not before, instead of hanging.
  it.each([
    ['a short deadline', 5, 10, 59_000],
    ['a long deadline (ten of them count)', 10_000, 1000, 159_000],
  ])(
    'fails a phase that cannot drain, with %s, at its drain limit',
    async (_name, deadlineMs, sampleMs, before) => {
      const rt = fakeRuntime({ workEndsAt: () => undefined });
      const plan = { rate: 200, windowMs: 50, seed: 3, deadlineMs };
      const rec = new PhaseRecorder('unbounded', plan.rate, 'x');
      let outcome: string = 'pending';
      const done = openLoop(rt.lr, work, { ...plan, sampleMs }, rec).then(
        () => {
          outcome = 'resolved';
        },
        (err: { code?: string }) => {
          outcome = `rejected ${err.code}`;
        },
      );
      await vi.advanceTimersByTimeAsync(before);
      expect(outcome).toBe('pending');
      await vi.advanceTimersByTimeAsync(2_000);
      await done;
      expect(outcome).toBe('rejected OMNI_ERR_BENCH');
    },
  );
});

/** A fake runtime whose calls take `ms(rows)` of fake time; it records each call's rows and the most outstanding at once. */
function countingRuntime(ms: (rows: number) => number) {
  let outstanding = 0;
  let most = 0;
  const rows: number[] = [];
  const lr = {
    run(_x: Float32Array, opts: { rows: number }): Promise<void> {
      rows.push(opts.rows);
      most = Math.max(most, ++outstanding);
      return new Promise((resolve) =>
        setTimeout(() => {
          outstanding--;
          resolve();
        }, ms(opts.rows)),
      );
    },
  } as unknown as LinearRuntime;
  return { lr, rows, most: () => most };
}

describe('calibrate', () => {
  it('keeps N requests outstanding and measures capacity after the warm-up quarter only', async () => {
    const t0 = performance.now();
    // Slow while the threads warm up (the first quarter), then 10 ms a request.
    const { lr, rows, most } = countingRuntime(() => (performance.now() - t0 < 250 ? 50 : 10));
    const done = calibrate(lr, work, 42, 1, 2);
    await vi.advanceTimersByTimeAsync(1100);
    const c = await done;
    expect(most()).toBe(2);
    expect(c).toMatchObject({ seconds: 1, concurrency: 2 });
    // Two callers, 10 ms each after the warm-up: 200/s, counted from 250 ms to the end.
    expect(c.completed).toBe(150);
    expect(c.capacity).toBeCloseTo(200, 6);
    // Every call counts in `calls`, the warm-up quarter's (5 per caller at 50 ms) too.
    expect(c.calls).toBe(rows.length);
    expect(c.calls).toBe(2 * (5 + 75));
    // Costs are the seeded uniform rows, drawn in call order.
    const prng = new Prng(42);
    expect(rows).toEqual(rows.map(() => prng.int(1, MAX_ROWS)));
  });

  it('does not overstate capacity when completions are sparse (slow calls)', async () => {
    // One caller, 700 ms a call, 1 s: one completion (at 700 ms) in the measured 750 ms, so
    // 1 / 0.75 s. Starting the clock at that completion while counting it gave 1 / 0.3 s.
    const lr = {
      run: (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 700)),
    } as unknown as LinearRuntime;
    const done = calibrate(lr, work, 1, 1, 1);
    await vi.advanceTimersByTimeAsync(1500);
    const c = await done;
    expect(c.completed).toBe(1);
    expect(c.capacity).toBeCloseTo(1 / 0.75, 6);
  });
  it('reports a capacity of 0, not NaN, when the measured part is too short to hold any time', async () => {
    // --calibrate 1e-320 is a number > 0, but a quarter of it added to the clock changes nothing.
    const { lr } = countingRuntime(() => 1);
    const done = calibrate(lr, work, 1, 1e-320, 1);
    await vi.advanceTimersByTimeAsync(10);
    const c = await done;
    expect(c.completed).toBe(0);
    expect(c.capacity).toBe(0);
  });
});

describe('repeatCalls', () => {
  it('makes exactly the calls asked, at most N at a time, with the seeded rows', async () => {
    const { lr, rows, most } = countingRuntime((r) => r);
    const done = repeatCalls(lr, work, 42, 37, 3);
    await vi.advanceTimersByTimeAsync(1000);
    await done;
    expect(rows).toHaveLength(37);
    expect(most()).toBe(3);
    const prng = new Prng(42);
    expect(rows).toEqual(rows.map(() => prng.int(1, MAX_ROWS)));
  });

  it('makes none for zero calls, and no more callers than calls', async () => {
    const made: number[] = [];
    const lr = { run: (_x: Float32Array, opts: { rows: number }) => Promise.resolve(made.push(opts.rows)) };
    await repeatCalls(lr as unknown as LinearRuntime, work, 1, 0, 4);
    expect(made).toHaveLength(0);
    await repeatCalls(lr as unknown as LinearRuntime, work, 1, 2, 4);
    expect(made).toHaveLength(2);
  });
});
