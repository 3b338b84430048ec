/**
 * A seeded fault model of the Runtime: each run starts one runtime with small bounds and throws
 * a random mixture at it: calls that return, throw, throw fatal, exit their thread, throw
 * outside the handler, wait on a gate the test opens later, or stop on ctx.signal; aborts
 * before run, while waiting, queued or running; deadlines of 1 ms or of days; close() with and
 * without a timeout at any point. Threads are ordered only by the shared words of
 * fixtures/runtime-chaos-worker.ts, so what a call may end with is known from what the test
 * did, whatever the interleaving; the checks hold for every interleaving:
 * - depth never exceeds the bound (nor units the ceiling), and a handler that has not finished
 *   holds its capacity whoever settled its caller;
 * - every call settles, once, with an outcome its own story allows (a refused or unavailable
 *   call never runs; no call runs twice; a value is the call's own);
 * - report()'s outcome counters match what the callers saw and add up to the calls made;
 * - close() resolves with depth 0, units 0, state 'stopped', no worker thread left and no
 *   extra handle in the process.
 * A failure names its seed: OMNI_CHAOS_SEED=<seed> OMNI_CHAOS_RUNS=1 reruns just that run.
 */
import { expect, it } from 'vitest';
import { Prng } from '../src/cli/prng.js';
import { Runtime, type RuntimeReport, type RuntimeState } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import {
  type ChaosInput,
  type ChaosKind,
  FINISHED,
  GO,
  INVOKED,
  STARTED,
  WORDS,
} from './fixtures/runtime-chaos-worker.js';
import { awhile, turns, until } from './fixtures/runtime-harness.js';

const WORKER = builtModuleUrl('test/fixtures/runtime-chaos-worker.js');
const RUNS = Number(process.env.OMNI_CHAOS_RUNS ?? 60);
const FIRST_SEED = Number(process.env.OMNI_CHAOS_SEED ?? 1);
const MAX_CALLS = 64;

type Mode = 'refuse' | 'wait' | 'serial';
type Tag =
  | 'value'
  | 'TASK_FAILED'
  | 'FATAL'
  | 'EXITED'
  | 'DEADLINE'
  | 'ABORT'
  | 'UNAVAILABLE'
  | 'REJECTED'
  | 'TOO_LARGE';

const OWN: Record<ChaosKind, Tag> = {
  value: 'value',
  gate: 'value',
  stop: 'value',
  throw: 'TASK_FAILED',
  fatal: 'FATAL',
  exit: 'EXITED',
  uncaught: 'EXITED',
};
const TAG_OF: Record<string, Tag> = {
  OMNI_ERR_TASK_FAILED: 'TASK_FAILED',
  X_CHAOS_FATAL: 'FATAL',
  OMNI_ERR_WORKER_EXITED: 'EXITED',
  OMNI_ERR_DEADLINE: 'DEADLINE',
  OMNI_ERR_ABORTED: 'ABORT',
  OMNI_ERR_UNAVAILABLE: 'UNAVAILABLE',
  OMNI_ERR_REJECTED: 'REJECTED',
  OMNI_ERR_TOO_LARGE: 'TOO_LARGE',
};

/** One call and everything the test did that bears on how it may end. */
interface Call {
  readonly n: number;
  readonly kind: ChaosKind;
  readonly cost: number;
  readonly deadline: 'none' | 'tiny' | 'huge';
  readonly controller: AbortController | undefined;
  readonly preAborted: boolean;
  readonly stateAtRun: RuntimeState;
  readonly fitsAtRun: boolean;
  readonly tooLarge: boolean;
  /** abort() was called while the test saw the call unsettled. */
  abortWhileOpen: boolean;
  /** ...and its handler had not finished then: its caller must not get the handler's result. */
  abortBeforeFinish: boolean;
  closedWhileOpen: boolean;
  forcedWhileOpen: boolean;
  fatalWhileOpen: boolean;
  settled: boolean;
  tag?: Tag | string;
  value?: unknown;
  fatalFlag?: unknown;
  goAtSettle: number;
}

function allowed(c: Call, mode: Mode): Set<Tag | string> {
  if (c.stateAtRun !== 'ready') return new Set(['UNAVAILABLE']);
  if (c.preAborted) return new Set(['ABORT']);
  if (c.tooLarge) return new Set(['TOO_LARGE']);
  const tags = new Set<Tag | string>();
  if (mode === 'refuse' && !c.fitsAtRun) tags.add('REJECTED');
  const exits = c.kind === 'exit' || c.kind === 'uncaught';
  if (!c.abortBeforeFinish || exits) tags.add(OWN[c.kind]);
  if (c.abortWhileOpen) tags.add('ABORT');
  if (c.deadline === 'tiny') tags.add('DEADLINE');
  // A forced close cuts off running work; one that had released its claim just then is a failure.
  if (c.forcedWhileOpen) tags.add('EXITED').add('TASK_FAILED');
  if (mode !== 'refuse' && (c.closedWhileOpen || c.fatalWhileOpen)) tags.add('UNAVAILABLE');
  return tags;
}

/** Worker threads alive in this process (Node's diagnostic report lists them). */
function workerThreads(): number {
  return (process.report.getReport() as { workers: unknown[] }).workers.length;
}

/** The process's active handles and requests by type (a terminal's own are not the runtime's). */
function resources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const name of process.getActiveResourcesInfo()) {
    if (name !== 'TTYWrap') counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

/** Types of which there are more now than in `before` (vitest's own timers come and go). */
function extra(before: Map<string, number>): string[] {
  return [...resources()].filter(([name, n]) => n > (before.get(name) ?? 0)).map(([name]) => name);
}

async function chaosRun(seed: number, trace: string[]): Promise<void> {
  const generator = new Prng(seed); // seeded: the same sequence for the same seed
  const random = (): number => generator.next();
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const mode = pick<Mode>(['refuse', 'wait', 'serial']);
  const requests = 2 + Math.floor(random() * 3);
  const units = mode !== 'serial' && random() < 0.5 ? 2 + Math.floor(random() * 5) : undefined;
  const threads = 1 + Math.floor(random() * 2);
  const steps = 5 + Math.floor(random() * 16);
  const admission = mode === 'serial' ? undefined : { requests, units, wait: mode === 'wait' };
  trace.push(`${mode} requests ${requests} units ${units} threads ${threads} steps ${steps}`);

  const baseWorkers = workerThreads();
  const baseResources = resources();
  const rt = await Runtime.start({ worker: WORKER, threads, admission });
  const words = new Int32Array(new SharedArrayBuffer(4 * WORDS * MAX_CALLS));
  const word = (c: Call, index: number): number => Atomics.load(words, c.n * WORDS + index);
  const calls: Call[] = [];
  const closes: Promise<{ clean: boolean; abandoned: number }>[] = [];
  let closed = false;
  let forced = false;
  let fatalMade = false;
  const open = (): Call[] => calls.filter((c) => !c.settled);
  const openGates = (): void => {
    for (let n = 0; n < calls.length; n++) {
      Atomics.store(words, n * WORDS + GO, 1);
      Atomics.notify(words, n * WORDS + GO);
    }
  };
  try {
    const check = (where: string): void => {
      const r: RuntimeReport = rt.report(); // first: a handler seen unfinished below was unfinished here
      const busy = calls.filter((c) => word(c, STARTED) > 0 && word(c, FINISHED) === 0);
      if (admission) {
        expect(r.depth, `${where}: depth within the bound`).toBeLessThanOrEqual(requests);
        if (units !== undefined)
          expect(r.units, `${where}: units within the ceiling`).toBeLessThanOrEqual(units);
      }
      if (!forced) {
        expect(r.depth, `${where}: unfinished handlers hold their capacity`).toBeGreaterThanOrEqual(
          busy.length,
        );
        // The work itself stays within the bound: capacity given back before its work ended
        // would let more handlers run at once than the bound admits.
        if (admission)
          expect(busy.length, `${where}: handlers running at once`).toBeLessThanOrEqual(requests);
        if (units !== undefined) {
          const held = busy.reduce((sum, c) => sum + c.cost, 0);
          expect(r.units, `${where}: unfinished handlers hold their units`).toBeGreaterThanOrEqual(held);
          expect(held, `${where}: units of the handlers running at once`).toBeLessThanOrEqual(units);
        }
      }
      const counted = r.completed + r.failed + r.aborted + r.deadline + r.refused + r.invalid + r.unavailable;
      const seen = calls.length - open().length;
      expect(counted, `${where}: outcomes counted`).toBeGreaterThanOrEqual(seen);
      expect(counted, `${where}: outcomes counted`).toBeLessThanOrEqual(calls.length);
      for (const c of calls)
        expect(word(c, INVOKED), `${where}: call ${c.n} ran at most once`).toBeLessThanOrEqual(1);
    };

    const run = (): void => {
      const n = calls.length;
      const kind = pick<ChaosKind>([
        'value',
        'value',
        'throw',
        'fatal',
        'exit',
        'uncaught',
        'gate',
        'gate',
        'stop',
        'stop',
      ]);
      // Fatal ends a run's useful life (the runtime fails): keep it rare.
      const k = kind === 'fatal' && random() < 0.6 ? 'value' : kind;
      const cost = units !== undefined ? Math.floor(random() * (units + 2)) : Math.floor(random() * 3);
      const deadline = pick(['none', 'none', 'tiny', 'huge'] as const);
      const signalled = random() < 0.5;
      const controller = signalled ? new AbortController() : undefined;
      const preAborted = signalled && random() < 0.2;
      if (preAborted) controller!.abort();
      const before = rt.report();
      const fitsAtRun = before.depth + 1 <= requests && (units === undefined || before.units + cost <= units);
      const c: Call = {
        n,
        kind: k,
        cost,
        deadline,
        controller,
        preAborted,
        stateAtRun: rt.state,
        fitsAtRun,
        tooLarge: units !== undefined && cost > units,
        abortWhileOpen: false,
        abortBeforeFinish: false,
        closedWhileOpen: closed,
        forcedWhileOpen: forced,
        fatalWhileOpen: fatalMade || k === 'fatal',
        settled: false,
        goAtSettle: 0,
      };
      if (k === 'fatal') {
        fatalMade = true;
        for (const o of open()) o.fatalWhileOpen = true;
      }
      calls.push(c);
      const input: ChaosInput = {
        kind: k,
        words: words.buffer as SharedArrayBuffer,
        at: n * WORDS,
        value: 1000 + n,
        sync: random() < 0.3,
      };
      const deadlineMs = deadline === 'tiny' ? 1 : deadline === 'huge' ? 1e9 : undefined;
      trace.push(
        `run ${n} ${k}${input.sync ? ' sync' : ''} cost ${cost} deadline ${deadline} signal ${signalled}${preAborted ? ' aborted' : ''} (${c.stateAtRun}, fits ${fitsAtRun})`,
      );
      rt.run(input, { cost, deadlineMs, signal: controller?.signal }).then(
        (value) => {
          Object.assign(c, { settled: true, tag: 'value', value, goAtSettle: word(c, GO) });
        },
        (err: { code?: string; fatal?: unknown }) => {
          const tag = TAG_OF[err?.code ?? ''] ?? `other ${String(err?.code)}`;
          Object.assign(c, { settled: true, tag, fatalFlag: err?.fatal, goAtSettle: word(c, GO) });
        },
      );
    };

    const close = (): void => {
      const option = pick([undefined, 0, 5, 1e9] as const);
      trace.push(`close ${option}`);
      closed = true;
      forced ||= option !== undefined;
      for (const c of open()) {
        c.closedWhileOpen = true;
        c.forcedWhileOpen ||= option !== undefined;
      }
      closes.push(rt.close(option === undefined ? undefined : { timeoutMs: option }));
    };

    for (let step = 0; step < steps; step++) {
      const what = random();
      const gated = open().filter((c) => (c.kind === 'gate' || c.kind === 'stop') && word(c, GO) === 0);
      const abortable = open().filter((c) => c.controller && !c.controller.signal.aborted);
      if (what < 0.45 && calls.length < MAX_CALLS) run();
      else if (what < 0.58 && abortable.length > 0) {
        // Mostly a call whose handler runs: its caller leaves, its capacity must not.
        const running = abortable.filter((c) => word(c, STARTED) > 0 && word(c, FINISHED) === 0);
        const c = pick(running.length > 0 && random() < 0.7 ? running : abortable);
        c.abortWhileOpen = true;
        c.abortBeforeFinish = word(c, FINISHED) === 0;
        trace.push(`abort ${c.n} (finished ${word(c, FINISHED)})`);
        c.controller!.abort();
      } else if (what < 0.72 && gated.length > 0) {
        const c = pick(gated);
        trace.push(`open ${c.n}`);
        Atomics.store(words, c.n * WORDS + GO, 1);
        Atomics.notify(words, c.n * WORDS + GO);
      } else if (what < 0.84 && gated.length > 0) {
        const c = pick(gated);
        trace.push(`await start of ${c.n}`);
        await awhile(words, c.n * WORDS + STARTED, 50);
      } else if (what < 0.9) {
        close();
      } else {
        trace.push('turns');
        await turns(1 + Math.floor(random() * 5));
      }
      await turns(1);
      check(`step ${step}`);
      for (const c of calls) {
        if (c.settled && c.tag === 'FATAL')
          expect(rt.state, `a fatal error fails the runtime`).not.toBe('ready');
      }
    }

    // The end: every gate opens, close() (unless a step did) drains or cuts the rest.
    trace.push('open every gate');
    openGates();
    if (closes.length === 0 || random() < 0.3) close();
    let results: { clean: boolean; abandoned: number }[] | undefined;
    void Promise.all(closes).then((r) => {
      results = r;
    });
    await until(() => results !== undefined, 'close() resolves');
    await turns(2);
    const pending = open().map((c) => c.n);
    expect(pending, 'every call settled by the time close() resolved').toEqual([]);
    check('after close');

    const r = rt.report();
    expect(r).toMatchObject({ state: 'stopped', depth: 0, units: 0, waiting: 0 });
    for (const result of results!) {
      expect(result, 'every close() gets the same result').toEqual(results![0]);
      if (!forced) expect(result).toEqual({ clean: true, abandoned: 0 });
      if (admission) expect(result.abandoned).toBeLessThanOrEqual(requests);
    }
    const count = (...tags: Tag[]): number => calls.filter((c) => tags.includes(c.tag as Tag)).length;
    expect({
      completed: r.completed,
      failed: r.failed,
      aborted: r.aborted,
      deadline: r.deadline,
      invalid: r.invalid,
      refusedOrUnavailable: r.refused + r.unavailable,
    }).toEqual({
      completed: count('value'),
      failed: count('TASK_FAILED', 'FATAL', 'EXITED'),
      aborted: count('ABORT'),
      deadline: count('DEADLINE'),
      invalid: 0,
      refusedOrUnavailable: count('REJECTED', 'TOO_LARGE', 'UNAVAILABLE'),
    });
    if (mode === 'refuse') expect(r.rejected).toBe(count('REJECTED', 'TOO_LARGE'));
    for (const c of calls) {
      const where = `call ${c.n} (${c.kind})`;
      expect([...allowed(c, mode)], `${where}: its outcome is one its story allows`).toContain(c.tag);
      expect(word(c, INVOKED), `${where} ran at most once`).toBeLessThanOrEqual(1);
      if (c.tag === 'value') {
        expect(c.value, `${where}: its own value`).toBe(1000 + c.n);
        expect(word(c, INVOKED), `${where}: a value comes from its handler`).toBe(1);
        if (c.kind === 'gate' || c.kind === 'stop')
          expect(c.goAtSettle, `${where}: ends only once released`).toBe(1);
      }
      if (c.tag === 'FATAL') expect(c.fatalFlag).toBe(true);
      if (c.preAborted || ['UNAVAILABLE', 'REJECTED', 'TOO_LARGE'].includes(c.tag as string)) {
        expect(word(c, INVOKED), `${where}: never ran`).toBe(0);
      }
    }
    // Polled, not read once: seen once in about 2,000 runs, two threads were still listed just as
    // close() resolved; a thread left running for good still fails here.
    await until(() => workerThreads() === baseWorkers, 'no worker thread left');
    await until(() => extra(baseResources).length === 0, `no extra handle (${extra(baseResources)})`);
  } catch (err) {
    // Leave nothing blocked for the report: every gate opens and the threads are cut off.
    openGates();
    await rt.close({ timeoutMs: 0 }).catch(() => {});
    throw err;
  }
}

const SEEDS = Array.from({ length: RUNS }, (_, i) => FIRST_SEED + i);

it.each(SEEDS)(
  'seed %i: random calls, faults, aborts, deadlines and closes keep every invariant',
  async (seed) => {
    const trace: string[] = [];
    try {
      await chaosRun(seed, trace);
    } catch (err) {
      const message = `seed ${seed} (OMNI_CHAOS_SEED=${seed} OMNI_CHAOS_RUNS=1): ${(err as Error).message}`;
      throw Object.assign(new Error(`${message}\n  ${trace.join('\n  ')}`), { cause: err });
    }
  },
);
