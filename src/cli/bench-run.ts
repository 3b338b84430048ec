/**
 * One `omni-runtime bench` run: two runtimes over the same native worker (the default serial
 * scheduler and bounded admission), a capacity calibration, then every offered load on each.
 */
import { availableParallelism, cpus } from 'node:os';
import { LinearRuntime } from '../linear/linear-runtime.js';
import { BenchError } from './bench-error.js';
import { type BenchConfig, checkPhaseArrivals, type RateSpec } from './bench-options.js';
import {
  type Calibration,
  calibrate,
  makeInputs,
  openLoop,
  repeatCalls,
  SEND_AHEAD_MS,
  type Workload,
} from './load-generator.js';
import { type Mode, PhaseRecorder, type PhaseResult } from './phase-recorder.js';
import { phaseSeed } from './prng.js';
import type { Progress } from './progress.js';

export interface BenchResult {
  tool: 'omni-runtime bench';
  startedAt: string;
  node: string;
  cpu: string;
  cpus: number;
  backend: string;
  backendReason: string;
  /** The native library the threads loaded. */
  libraryPath: string | null;
  threads: number;
  layer: { inFeatures: number; outFeatures: number; op: string };
  cost: { unit: 'rows'; distribution: 'uniform'; min: 1; max: number };
  arrivals: string;
  seed: number;
  deadlineMs: number;
  durationS: number;
  phaseS: number;
  bounds: { requests: number; units: number };
  calibration: Calibration;
  /** Offered loads in requests per second, ascending. */
  rates: number[];
  phases: PhaseResult[];
}

export const MODES: readonly Mode[] = ['unbounded', 'bounded'];

export interface ResolvedRate {
  readonly rate: number;
  readonly label: string;
  /** The phase's arrival seed: from its place in --rates, never from the calibration. */
  readonly seed: number;
}

/**
 * Phases run from the lowest rate up; where a multiple of capacity lands among absolute rates
 * depends on the calibration, so each phase's seed follows its place in the list, not in the
 * run order: the same flags and seed give every phase the same arrivals.
 */
export function resolveRates(specs: readonly RateSpec[], capacity: number, seed: number): ResolvedRate[] {
  return specs
    .map((s, i) => ({
      rate: s.relative ? s.value * capacity : s.value,
      label: s.relative ? `${s.value}x` : `${s.value}/s`,
      seed: phaseSeed(seed, i),
    }))
    .sort((a, b) => a.rate - b.rate);
}

/** Runs a few requests on every thread, within the bounds, so no phase pays first-touch costs. */
async function warmUp(lr: LinearRuntime, work: Workload, config: BenchConfig): Promise<void> {
  const concurrency = Math.min(config.threads, config.requests, config.units);
  const rows = Math.max(1, Math.min(work.maxRows, Math.floor(config.units / concurrency)));
  for (let round = 0; round < 2; round++) {
    await Promise.all(Array.from({ length: concurrency }, () => lr.run(work.inputs[rows - 1]!, { rows })));
  }
}

/**
 * How often a phase samples the runtime's depth (the table's depth mean and max, the timeline
 * chart): every 1 % of its window, within 10-100 ms, as docs/benchmarks.md's column notes say.
 */
export function sampleIntervalMs(windowMs: number): number {
  return Math.max(10, Math.min(100, windowMs / 100));
}

export async function runBench(config: BenchConfig, progress: Progress): Promise<BenchResult> {
  const startedAt = new Date().toISOString();
  const work: Workload = {
    inputs: makeInputs(config.inFeatures, config.maxRows, config.seed),
    maxRows: config.maxRows,
  };
  const common = {
    threads: config.threads,
    inFeatures: config.inFeatures,
    outFeatures: config.outFeatures,
    seed: config.seed,
    ...(config.backend === undefined ? {} : { backend: config.backend }),
    libraries: config.libraries,
    ...(config.device === undefined ? {} : { device: config.device }),
  };
  progress.phase('starting threads');
  const unbounded = await LinearRuntime.start(common);
  let bounded: LinearRuntime;
  try {
    bounded = await LinearRuntime.start({
      ...common,
      admission: { requests: config.requests, units: config.units },
    });
  } catch (err) {
    await unbounded.close();
    throw err;
  }
  const runtimes: Record<Mode, LinearRuntime> = { unbounded, bounded };
  try {
    for (const mode of MODES) await warmUp(runtimes[mode], work, config);
    progress.phase('calibrating capacity');
    const calibrationSeed = phaseSeed(config.seed, 1_000);
    const calibration = await calibrate(
      runtimes.unbounded,
      work,
      calibrationSeed,
      config.calibrateS,
      // Enough outstanding calls that no thread waits on a main-thread round trip between tasks.
      4 * config.threads,
    );
    progress.phaseDone(config.calibrateS);
    if (!(calibration.capacity > 0) && config.rates.some((r) => r.relative)) {
      throw new BenchError('calibration completed no requests; pass absolute --rates');
    }
    // The bounded runtime gets as many calls, as many at a time as its bounds always admit, so the
    // first phase does not compare a runtime warmed by thousands of calls with one warmed by two.
    progress.phase('warming the bounded runtime');
    // At least 1: the flags keep maxRows <= units.
    const admitted = Math.min(config.requests, Math.floor(config.units / config.maxRows));
    const concurrency = Math.min(4 * config.threads, admitted);
    await repeatCalls(runtimes.bounded, work, calibrationSeed, calibration.calls, concurrency);
    progress.phaseDone(0);
    const rates = resolveRates(config.rates, calibration.capacity, config.seed);
    // Multiples of capacity are known only now; absolute rates were checked with the flags.
    for (const { rate, label } of rates) checkPhaseArrivals(rate, config.phaseS, label);
    const phases: PhaseResult[] = [];
    const windowMs = config.phaseS * 1000;
    const sampleMs = sampleIntervalMs(windowMs);
    for (const { rate, label, seed } of rates) {
      for (const mode of MODES) {
        const rec = new PhaseRecorder(mode, rate, label);
        const lr = runtimes[mode];
        progress.phase(`${mode} @ ${Math.round(rate)}/s (${label})`);
        const onSample = (): void => {
          const last = rec.lastSample;
          if (last) progress.update(last, config.phaseS);
        };
        const plan = {
          rate,
          windowMs,
          seed,
          deadlineMs: config.deadlineMs,
          sampleMs,
          onSample,
        };
        const end = await openLoop(lr, work, plan, rec);
        progress.phaseDone(config.phaseS);
        phases.push(rec.result(end));
      }
    }
    return {
      tool: 'omni-runtime bench',
      startedAt,
      node: process.version,
      cpu: cpus()[0]?.model ?? 'unknown',
      cpus: availableParallelism(),
      backend: runtimes.unbounded.backend,
      backendReason: config.backendIsDefault ? 'bench default' : runtimes.unbounded.backendReason,
      libraryPath: runtimes.unbounded.libraryPath,
      threads: config.threads,
      layer: { inFeatures: config.inFeatures, outFeatures: config.outFeatures, op: 'y = GELU(x W^T + b)' },
      cost: { unit: 'rows', distribution: 'uniform', min: 1, max: config.maxRows },
      arrivals: `open loop, Poisson (seeded exponential gaps), latency from scheduled arrival (from the send for one sent up to ${SEND_AHEAD_MS} ms ahead)`,
      seed: config.seed,
      deadlineMs: config.deadlineMs,
      durationS: config.durationS,
      phaseS: config.phaseS,
      bounds: { requests: config.requests, units: config.units },
      calibration,
      rates: rates.map((r) => r.rate),
      phases,
    };
  } finally {
    // Phases end drained, so this is quick; after a failure, abandon what is left in time.
    await Promise.all(MODES.map((mode) => runtimes[mode].close({ timeoutMs: 30_000 })));
  }
}
