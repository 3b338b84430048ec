/**
 * A seeded lifecycle fuzz of Runtime (the engine and its checks: fixtures/lifecycle-fuzz.ts):
 * each seed starts one runtime over the gated worker, with a random scheduler (refusing,
 * waiting or serial), bounds, thread count and default deadline, and walks it through random
 * calls (echoes, coded and plain throws, handlers blocked on a shared word, rarely a thread's
 * exit or a fatal error; malformed options and inputs that cannot be posted), aborts, deadlines,
 * releases, report() snapshots and close()s. Its threadEnds call run() and close() now and then,
 * as docs/runtime.md allows, and must tell each thread's exit once and stopped() once, last, before
 * close() resolves. The process-lifetime end of this fuzz: process-lifetime-random-life.test.ts.
 * OMNI_FUZZ_SEED=<seed> OMNI_FUZZ_RUNS=<n> (OMNI_FUZZ_STEPS=<steps>) reruns from a seed (e.g.
 * hundreds, outside CI).
 */
import { afterEach, expect, it } from 'vitest';
import type { RunOptions, Runtime } from '../src/index.js';
import {
  type Made,
  type Random,
  randomOf,
  randomSetting,
  type Signalled,
  type Subject,
  walk,
  walkSeed,
} from './fixtures/lifecycle-fuzz.js';
import { held, nothingLeft } from './fixtures/process-held.js';
import { type GatedInput, newControl } from './fixtures/runtime-control.js';
import { cleanup, runtimeWarnings, start } from './fixtures/runtime-harness.js';
import { recorder, STOPPED } from './fixtures/thread-ends-recorder.js';

afterEach(cleanup);

const RUNS = Number(process.env.OMNI_FUZZ_RUNS ?? 30);
const FIRST_SEED = Number(process.env.OMNI_FUZZ_SEED ?? 1);
const STEPS = Number(process.env.OMNI_FUZZ_STEPS ?? 40);

/** Options run() must refuse before admission (OMNI_ERR_INVALID_COST / _INVALID_ARGUMENT). */
const MALFORMED: readonly unknown[] = [
  { cost: -1 },
  { cost: 1.5 },
  { cost: Number.NaN },
  { cost: '1' },
  { deadlineMs: 0 },
  { deadlineMs: -1 },
  { bogus: 1 },
  { signal: {} },
  { transfer: 'x' },
  5,
];

function subjectOf(
  rt: Runtime,
  requests: number | undefined,
  units: number | undefined,
  threads: number,
  refusing: boolean,
  extra: Made[],
  closed: (closing: Promise<unknown>) => void,
): Subject {
  let made = 0;
  return {
    extra,
    get state() {
      return rt.state;
    },
    whenFailed: () => rt.whenFailed(),
    get failure() {
      return rt.failure;
    },
    refusalsRejected: refusing,
    report: () => rt.report(),
    close: (options) => {
      const closing = rt.close(options as never);
      closed(closing);
      return closing;
    },
    lateCall: () => rt.run({ mode: 'echo', value: 'late' }),
    requests,
    units,
    threads,
    call(random: Random, signal: (random: Random) => Signalled) {
      const n = made++;
      const value = `v${n}`;
      const kind = random.pick([
        'echo',
        'echo',
        'gate',
        'gate',
        'gate',
        'throw-coded',
        'throw-plain',
        'unclonable',
        'malformed',
        'exit',
        'fatal',
      ] as const);
      // A thread's exit or a fatal error changes the rest of the walk: kept rare.
      const rare = (kind === 'exit' || kind === 'fatal') && random.next() < 0.7;
      const k = rare ? 'echo' : kind;
      if (k === 'malformed') {
        const options = random.pick(MALFORMED);
        return {
          label: `malformed ${JSON.stringify(options)}`,
          promise: rt.run({ mode: 'echo' }, options as RunOptions),
        };
      }
      const cost = units !== undefined ? random.int(0, units + 1) : random.int(0, 2);
      const { controller, signal: given, label } = signal(random);
      const deadlineMs = random.pick([undefined, undefined, undefined, 1, 5, 1e9, Number.POSITIVE_INFINITY]);
      const options: RunOptions = { cost, signal: given, deadlineMs };
      const what = `cost ${cost} deadline ${deadlineMs}${label}`;
      if (k === 'gate') {
        const gate = newControl();
        const sync = random.next() < 0.3;
        const input: GatedInput = { mode: 'gate', control: gate.buffer as SharedArrayBuffer, sync, value };
        return {
          label: `gate${sync ? ' sync' : ''} ${what}`,
          promise: rt.run(input, options),
          controller,
          gate,
          cost,
          value,
        };
      }
      if (k === 'unclonable') {
        const input = { mode: 'echo', value: () => value };
        return {
          label: `unclonable ${what}`,
          promise: rt.run(input, options),
          controller,
          postedInvalid: true,
        };
      }
      const input: GatedInput = { mode: k, value, code: k === 'fatal' ? 'X_FATAL' : 'X_CODED' };
      return {
        label: `${k} ${what}`,
        promise: rt.run(input, options),
        controller,
        ...(k === 'echo' ? { value } : {}),
      };
    },
  };
}

const SEEDS = Array.from({ length: RUNS }, (_, i) => FIRST_SEED + i);

it.each(SEEDS)(
  'seed %i: a random life of calls, aborts, deadlines, releases and closes keeps every invariant',
  (seed) =>
    walkSeed(seed, 'OMNI_FUZZ_SEED', async (random, trace) => {
      const { mode, requests, units, threads, deadlineMs, admission } = randomSetting(random, trace);
      const before = held();
      // The runtime's threadEnds log every end and, now and then, call the runtime from there,
      // as docs/runtime.md allows (run() answers as anywhere; close() returns the close under way).
      const ends = recorder();
      const extra: Made[] = [];
      const hooks = randomOf(seed ^ 0x5eed);
      let rt: Runtime | undefined;
      const fromHook = (where: string): void => {
        const what = hooks.next();
        if (rt === undefined || what < 0.6) return;
        if (what < 0.8) {
          const value = `${where} ${extra.length}`;
          const promise = rt.run({ mode: 'echo', value });
          // Handled now: the walk takes it in at its next check, after its rejection's turn.
          promise.catch(() => {});
          extra.push({ label: `echo from ${where}`, promise, value });
        } else {
          void rt.close();
        }
      };
      const warnings = runtimeWarnings();
      rt = await start({
        threads,
        admission,
        deadlineMs,
        threadEnds: {
          exited(threadId) {
            ends.ends.exited(threadId);
            fromHook('exited');
          },
          stopped() {
            ends.ends.stopped();
            fromHook('stopped');
          },
        },
      });
      // Told before close() resolves, unless close() gave up waiting for a thread (a warning).
      let stoppedAtClose: boolean | undefined;
      const closed = (closing: Promise<unknown>): void => {
        void closing.then(
          () => {
            stoppedAtClose ??= ends.log.includes(STOPPED);
          },
          () => {},
        );
      };
      await walk(
        subjectOf(rt, requests, units, threads, mode === 'refuse', extra, closed),
        random,
        STEPS,
        trace,
      );
      await nothingLeft(before);
      expect(extra.length, 'no thread end told after close() resolved').toBe(0);
      const exits = ends.log.filter((end) => end !== STOPPED);
      expect(new Set(exits).size, `each thread's exit told once: ${ends.log}`).toBe(exits.length);
      expect(exits.length, 'every thread started told').toBeGreaterThanOrEqual(threads);
      expect(ends.log.at(-1), 'stopped() last').toBe(STOPPED);
      expect(ends.log.indexOf(STOPPED), 'stopped() once').toBe(ends.log.length - 1);
      if (!warnings.some((w) => w.includes('did not exit')))
        expect(stoppedAtClose, 'stopped() before close() resolved').toBe(true);
    }),
);
