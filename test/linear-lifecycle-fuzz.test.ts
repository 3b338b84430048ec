/**
 * A seeded lifecycle fuzz of LinearRuntime over the fixture library (the engine and its checks:
 * fixtures/lifecycle-fuzz.ts): each seed starts one with a random scheduler, bounds and thread
 * count, and walks it through random calls (valid rows, moved or copied; x of the wrong type or
 * length, rows that do not match or exceed maxRows, malformed options; stats(); injected copy
 * and rarely fatal faults), aborts, deadlines, report() snapshots and close()s. LinearRuntime
 * checks its own arguments before Runtime's run: those early ends must be counted as Runtime
 * counts its own. OMNI_FUZZ_SEED=<seed> OMNI_FUZZ_RUNS=<n> reruns from a seed.
 */
import { afterEach, beforeAll, it } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import type { LinearRunOptions, LinearRuntime } from '../src/index.js';
import {
  type Random,
  randomSetting,
  type Signalled,
  type Subject,
  walk,
  walkSeed,
} from './fixtures/lifecycle-fuzz.js';
import { closeRuntimes, start } from './fixtures/native-runtime-harness.js';
import { held, nothingLeft } from './fixtures/process-held.js';

beforeAll(() => {
  buildFixture();
});
afterEach(closeRuntimes);

const RUNS = Number(process.env.OMNI_FUZZ_RUNS ?? 15);
const FIRST_SEED = Number(process.env.OMNI_FUZZ_SEED ?? 1);
const STEPS = Number(process.env.OMNI_FUZZ_STEPS ?? 40);
const IN = 8;
const OUT = 4;

/** Options run() must refuse before admission. */
const MALFORMED: readonly unknown[] = [
  { cost: -1 },
  { cost: 0.5 },
  { rows: 0 },
  { rows: 1.5 },
  { rows: '1' },
  { deadlineMs: 0 },
  { bogus: 1 },
  { signal: 'x' },
  { transfer: 'x' },
  { transfer: [1] },
  5,
  null,
];

function subjectOf(
  lr: LinearRuntime,
  requests: number | undefined,
  units: number | undefined,
  threads: number,
): Subject {
  return {
    get state() {
      return lr.runtime.state;
    },
    whenFailed: () => lr.runtime.whenFailed(),
    get failure() {
      return lr.runtime.failure;
    },
    // Rows above maxRows are refused before admission (`refused`), never seen by the admission.
    refusalsRejected: false,
    report: () => lr.report(),
    close: (options) => lr.close(options as never),
    lateCall: () => lr.run(new Float32Array(IN)),
    requests,
    units,
    threads,
    call(random: Random, signal: (random: Random) => Signalled) {
      const kind = random.pick([
        'rows',
        'rows',
        'rows',
        'rows',
        'malformed',
        'not-f32',
        'length',
        'mismatch',
        'too-many',
        'stats',
        'inject',
      ] as const);
      if (kind === 'malformed') {
        const options = random.pick(MALFORMED);
        return {
          label: `malformed ${JSON.stringify(options)}`,
          promise: lr.run(new Float32Array(IN), options as LinearRunOptions),
        };
      }
      if (kind === 'not-f32')
        return { label: 'Float64Array', promise: lr.run(new Float64Array(IN) as never) };
      if (kind === 'length') return { label: 'part of a row', promise: lr.run(new Float32Array(IN + 1)) };
      if (kind === 'mismatch')
        return { label: 'rows 2 of 1', promise: lr.run(new Float32Array(IN), { rows: 2 }) };
      if (kind === 'stats') return { label: 'stats', promise: lr.stats() };
      if (kind === 'inject') {
        // A fatal fault fails the runtime for the rest of the walk: kept rare.
        const inject = random.next() < 0.15 ? 'fatal' : 'copy';
        return { label: `inject ${inject}`, promise: lr.runtime.run({ inject }) };
      }
      if (kind === 'too-many' && random.next() < 0.3) {
        const rows = lr.maxRows + 1;
        return { label: `rows ${rows}`, promise: lr.run(new Float32Array(rows * IN)) };
      }
      const rows = random.int(1, 3);
      const x = new Float32Array(rows * IN).map((_, i) => (i % 7) - 3);
      const { controller, signal: given, label } = signal(random);
      const options: LinearRunOptions = {
        rows: random.next() < 0.5 ? rows : undefined,
        cost: random.next() < 0.3 ? random.int(0, (units ?? 2) + 1) : undefined,
        signal: given,
        deadlineMs: random.pick([undefined, undefined, undefined, 1, 1e9, Number.POSITIVE_INFINITY]),
        transfer: random.next() < 0.3 ? [x.buffer] : undefined,
      };
      return {
        label: `rows ${rows} ${JSON.stringify(options)}${label}`,
        promise: lr.run(x, options),
        controller,
      };
    },
  };
}

const SEEDS = Array.from({ length: RUNS }, (_, i) => FIRST_SEED + i);

it.each(SEEDS)(
  'seed %i: a random life of linear calls, aborts, deadlines and closes keeps every invariant',
  (seed) =>
    walkSeed(seed, 'OMNI_FUZZ_SEED', async (random, trace) => {
      const { requests, units, threads, deadlineMs, admission } = randomSetting(random, trace);
      const before = held();
      const lr = await start({
        threads,
        admission,
        deadlineMs,
        inFeatures: IN,
        outFeatures: OUT,
        faultInjection: true,
      });
      await walk(subjectOf(lr, requests, units, threads), random, STEPS, trace);
      await nothingLeft(before);
    }),
);
