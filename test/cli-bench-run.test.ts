/**
 * One `omni-runtime bench` run in-process, on a tiny layer over the CPU fixture: what the result
 * says about the run (rates resolved and ascending, one phase per load and mode, the bounds and
 * costs used). Nothing here depends on how fast the machine is.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { type BenchConfig, parseBenchArgs } from '../src/cli/bench-options.js';
import { resolveRates, runBench, sampleIntervalMs } from '../src/cli/bench-run.js';
import { ArrivalProcess, phaseSeed } from '../src/cli/prng.js';
import { Progress } from '../src/cli/progress.js';
import { LinearRuntime } from '../src/linear/linear-runtime.js';
import { defaultLibraryPath } from '../src/native/index.js';

const quiet = { isTTY: false } as NodeJS.WriteStream;

function config(argv: string[]): BenchConfig {
  const parsed = parseBenchArgs(
    [...argv, '--threads', '1', '--in-features', '8', '--out-features', '8', '--out', 'unused'],
    {},
  );
  if (parsed === 'help') throw new Error('unexpected help');
  return parsed;
}

describe('resolveRates', () => {
  it("seeds each load by its place in --rates, so a multiple of capacity cannot change another load's arrivals", () => {
    const specs = [
      { value: 1, relative: true },
      { value: 100, relative: false },
    ];
    const below = resolveRates(specs, 50, 9); // 1x = 50/s runs first
    const above = resolveRates(specs, 500, 9); // 1x = 500/s runs last
    expect(below.map((r) => r.label)).toEqual(['1x', '100/s']);
    expect(above.map((r) => r.label)).toEqual(['100/s', '1x']);
    // A multiple of capacity is that many times the capacity; an absolute rate is itself.
    expect(below.map((r) => r.rate)).toEqual([50, 100]);
    expect(above.map((r) => r.rate)).toEqual([100, 500]);
    expect(resolveRates([{ value: 2.5, relative: true }], 40, 9).map((r) => r.rate)).toEqual([100]);
    for (const resolved of [below, above]) {
      expect(resolved.find((r) => r.label === '1x')?.seed).toBe(phaseSeed(9, 0));
      expect(resolved.find((r) => r.label === '100/s')?.seed).toBe(phaseSeed(9, 1));
    }
  });
});

describe('sampleIntervalMs', () => {
  it('"sampled every 1 % of the window (10-100 ms)" (docs/benchmarks.md): 1 %, within those bounds', () => {
    // The default run's window: 20 s over 4 rates x 2 modes.
    expect(sampleIntervalMs(2_500)).toBe(25);
    expect(sampleIntervalMs(1_000)).toBe(10);
    expect(sampleIntervalMs(10_000)).toBe(100);
    expect(sampleIntervalMs(999)).toBe(10);
    expect(sampleIntervalMs(10_001)).toBe(100);
    expect(sampleIntervalMs(100)).toBe(10);
    expect(sampleIntervalMs(3_600_000)).toBe(100);
  });
});

describe('runBench', () => {
  const dir = mkdtempSync(join(tmpdir(), 'omni-bench-run-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs every load on both modes, lowest load first, and reports the configuration it ran', async () => {
    // A copy of the fixture, so the result can only name it if --fixture-library reached the runtimes.
    const library = join(dir, 'libomni_fixture.so');
    copyFileSync(defaultLibraryPath('fixture'), library);
    const c = config([
      ...['--fixture-library', library],
      ...['--rates', '200,50', '--duration', '0.4', '--calibrate', '0.05'],
      ...['--requests', '3', '--units', '6', '--max-rows', '5', '--seed', '9', '--deadline-ms', '5000'],
    ]);
    // Each phase's sampler: 1 % of its window, within [10, 100] ms.
    const samplers: Array<number | undefined> = [];
    const setInterval = globalThis.setInterval;
    vi.spyOn(globalThis, 'setInterval').mockImplementation(((fn: () => void, ms?: number) => {
      if (fn.name === 'sample') samplers.push(ms);
      return setInterval(fn, ms);
    }) as typeof globalThis.setInterval);
    let r: Awaited<ReturnType<typeof runBench>>;
    try {
      r = await runBench(c, new Progress(1, quiet));
    } finally {
      vi.restoreAllMocks();
    }
    // Four 100 ms windows: 1 ms is below the floor.
    expect(samplers).toEqual([10, 10, 10, 10]);
    expect(r.rates).toEqual([50, 200]);
    expect(r.phases.map((p) => [p.mode, p.offeredRate, p.rateLabel])).toEqual([
      ['unbounded', 50, '50/s'],
      ['bounded', 50, '50/s'],
      ['unbounded', 200, '200/s'],
      ['bounded', 200, '200/s'],
    ]);
    expect(r).toMatchObject({
      backend: 'fixture',
      // Chosen by neither --backend nor OMNI_BACKEND: the runtime's "requested" would mislead.
      backendReason: 'bench default',
      libraryPath: library,
      threads: 1,
      seed: 9,
      deadlineMs: 5000,
      durationS: 0.4,
      phaseS: 0.1,
      bounds: { requests: 3, units: 6 },
      cost: { unit: 'rows', distribution: 'uniform', min: 1, max: 5 },
      layer: { inFeatures: 8, outFeatures: 8 },
    });
    // Enough outstanding calls to keep every thread busy: four per thread.
    expect(r.calibration).toMatchObject({ seconds: 0.05, concurrency: 4 });
    // The load is fixed by the seed: the load at place i of --rates (200 first, 50 second) offers
    // the arrivals of its own seeded stream, phaseSeed(seed, i), that fall in the window,
    // whatever the machine does with them.
    r.phases.forEach((p) => {
      const arrivals = new ArrivalProcess(phaseSeed(9, p.offeredRate === 200 ? 0 : 1), p.offeredRate, 5);
      let sent = 0;
      let units = 0;
      for (let a = arrivals.next(); a.at < 100; a = arrivals.next()) {
        sent++;
        units += a.rows;
      }
      expect([p.sent, p.sentUnits], `${p.mode} @ ${p.rateLabel}`).toEqual([sent, units]);
    });
    for (const p of r.phases) {
      expect(p.windowS).toBe(0.1);
      expect(p.completed + p.refused + p.deadline + p.failed).toBe(p.sent);
      expect(p.timeline.length).toBeGreaterThan(0);
    }
  });

  // Two threads under a 4-unit ceiling: warm-up calls of 2 rows each fit, two of --max-rows 4
  // would not. Two threads under a 1-request bound: one warm-up call at a time, not one a thread.
  // Either mistake has the bounded runtime refuse a warm-up call, failing the run before any load.
  it.each([
    ['units', ['--requests', '2', '--units', '4']],
    ['requests', ['--requests', '1', '--units', '8']],
    // 5 units over two threads: 2 rows a call (4 units in all), not 3 (6, over the ceiling).
    ['units (not a multiple of the threads)', ['--requests', '2', '--units', '5']],
  ])(
    'warms the bounded runtime within its bounds: a %s bound below one full call a thread',
    async (_, bounds) => {
      const c = parseBenchArgs(
        [
          ...['--threads', '2', '--max-rows', '4', ...bounds],
          ...['--rates', '50', '--duration', '0.2', '--calibrate', '0.05', '--deadline-ms', '5000'],
          ...['--in-features', '8', '--out-features', '8', '--out', 'unused'],
        ],
        {},
      );
      if (c === 'help') throw new Error('unexpected help');
      const r = await runBench(c, new Progress(1, quiet));
      expect(r.phases).toHaveLength(2);
      expect(r.threads).toBe(2);
    },
  );

  it('says the backend was requested when --backend chose it', async () => {
    // The other side of "bench default": a report that said it always would hide the choice.
    const c = config(['--backend', 'fixture', '--rates', '50', '--duration', '0.2', '--calibrate', '0.05']);
    const r = await runBench(c, new Progress(1, quiet));
    expect(r).toMatchObject({ backend: 'fixture', backendReason: 'requested' });
  });

  it('closes the runtime already started when the second one fails to start', async () => {
    const start = LinearRuntime.start.bind(LinearRuntime);
    const failure = Object.assign(new Error('second start failed'), { code: 'OMNI_ERR_TEST' });
    let first: LinearRuntime | undefined;
    let closed = 0;
    vi.spyOn(LinearRuntime, 'start').mockImplementation(async (options) => {
      if (first !== undefined) throw failure;
      first = await start(options);
      const close = first.close.bind(first);
      vi.spyOn(first, 'close').mockImplementation((opts) => {
        closed++;
        return close(opts);
      });
      return first;
    });
    try {
      const c = config(['--rates', '50', '--duration', '0.2', '--calibrate', '0.05']);
      await expect(runBench(c, new Progress(1, quiet))).rejects.toBe(failure);
      expect(closed).toBe(1);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('closes both runtimes, once each, when the run ends', async () => {
    // A runtime left open keeps its threads (and their native contexts) alive after the run.
    const start = LinearRuntime.start.bind(LinearRuntime);
    const closes: number[] = [];
    vi.spyOn(LinearRuntime, 'start').mockImplementation(async (options) => {
      const lr = await start(options);
      const i = closes.push(0) - 1;
      const close = lr.close.bind(lr);
      vi.spyOn(lr, 'close').mockImplementation((opts) => {
        closes[i]!++;
        return close(opts);
      });
      return lr;
    });
    try {
      const c = config(['--rates', '50', '--duration', '0.2', '--calibrate', '0.05']);
      await runBench(c, new Progress(1, quiet));
      expect(closes).toEqual([1, 1]);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('--device reaches both runtimes; without it, neither is given one (the runtime picks)', async () => {
    const seen: (number | undefined)[] = [];
    const stop = Object.assign(new Error('the test stops the start here'), { code: 'X_STOP' });
    vi.spyOn(LinearRuntime, 'start').mockImplementation(async (options) => {
      seen.push(options?.device);
      throw stop;
    });
    try {
      for (const argv of [['--device', '3'], []]) {
        const c = config([...argv, '--rates', '50', '--duration', '0.2', '--calibrate', '0.05']);
        await expect(runBench(c, new Progress(1, quiet))).rejects.toBe(stop);
      }
      expect(seen).toEqual([3, undefined]);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('fails a run whose calibration completed nothing when a load is relative to it', async () => {
    // A microsecond of calibration: no request can come back within it.
    const c = config(['--rates', '1x', '--duration', '0.2', '--calibrate', '0.000001']);
    await expect(runBench(c, new Progress(1, quiet))).rejects.toMatchObject({ code: 'OMNI_ERR_BENCH' });
  });

  it('fails a run whose calibration completed nothing when any load, not only every one, is relative', async () => {
    // 1x of no capacity is no load at all: the absolute load beside it must not hide that.
    const c = config(['--rates', '20,1x', '--duration', '0.2', '--calibrate', '0.000001']);
    await expect(runBench(c, new Progress(1, quiet))).rejects.toMatchObject({ code: 'OMNI_ERR_BENCH' });
  });

  it('runs absolute loads even when calibration completed nothing: they need no capacity', async () => {
    const c = config([
      '--rates',
      '20',
      '--duration',
      '0.2',
      '--calibrate',
      '0.000001',
      '--deadline-ms',
      '5000',
    ]);
    const r = await runBench(c, new Progress(1, quiet));
    expect(r.calibration.completed).toBe(0);
    expect(r.phases.map((p) => [p.mode, p.offeredRate])).toEqual([
      ['unbounded', 20],
      ['bounded', 20],
    ]);
  });

  it('refuses a multiple of capacity that would offer more arrivals than a phase may hold', async () => {
    // Known only once calibrated: any capacity times a million is over the cap in a 0.1 s phase.
    const c = config(['--rates', '1000000000x', '--duration', '0.2', '--calibrate', '0.2']);
    await expect(runBench(c, new Progress(1, quiet))).rejects.toMatchObject({ code: 'OMNI_ERR_USAGE' });
  });

  it('warms both modes with the same number of calls before the first phase', async () => {
    // Calibration drives the unbounded runtime alone; the bounded one must not enter the first
    // phase colder (its threads' code and workspace caches). Counted per runtime, not timed.
    const started: LinearRuntime[] = [];
    const start = LinearRuntime.start.bind(LinearRuntime);
    const run = LinearRuntime.prototype.run;
    const calls = new Map<LinearRuntime, number>();
    vi.spyOn(LinearRuntime, 'start').mockImplementation(async (options) => {
      const lr = await start(options);
      started.push(lr);
      return lr;
    });
    vi.spyOn(LinearRuntime.prototype, 'run').mockImplementation(function (
      this: LinearRuntime,
      ...args: Parameters<LinearRuntime['run']>
    ) {
      calls.set(this, (calls.get(this) ?? 0) + 1);
      return run.apply(this, args);
    });
    let before: number[] | undefined;
    const progress = new Progress(1, quiet);
    const phase = progress.phase.bind(progress);
    vi.spyOn(progress, 'phase').mockImplementation((label) => {
      if (before === undefined && label.startsWith('unbounded @'))
        before = started.map((lr) => calls.get(lr) ?? 0);
      phase(label);
    });
    try {
      const c = config(['--rates', '50', '--duration', '0.2', '--calibrate', '0.2', '--deadline-ms', '5000']);
      const r = await runBench(c, progress);
      expect(before).toHaveLength(2);
      const [unbounded, bounded] = before!;
      // Two warm-up rounds of one call each (one thread), then calibration's calls.
      expect(unbounded).toBe(2 + r.calibration.calls);
      expect(r.calibration.calls).toBeGreaterThan(r.calibration.completed);
      expect(bounded).toBe(unbounded);
    } finally {
      vi.restoreAllMocks();
    }
  });
});
