/**
 * 10,000 tiny tasks through a bounded runtime with random costs (seeded), random caller aborts
 * and deadlines, rare coded failures and rare worker deaths. Afterwards every promise has
 * settled, the bound was never exceeded, depth and units are back to 0, and every submitted
 * call is accounted for exactly once, both by the codes callers saw and by report().
 */
import { afterEach, expect, it } from 'vitest';
import { Prng } from '../src/cli/prng.js';
import { INVOKED, newControl } from './fixtures/runtime-control.js';
import { cleanup, start, until } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const SUBMITTED = 10_000;
const CALLERS = 20; // concurrent callers: more than the request bound, so refusals happen
const REQUESTS = 16;
const UNITS = 64;
const SEED = Number(process.env.RUNTIME_STRESS_SEED ?? 0x5eed_2024);

type Outcome = 'completed' | 'refused' | 'aborted' | 'deadline' | 'failed';

function classify(code: string | undefined): Outcome | undefined {
  switch (code) {
    case 'OMNI_ERR_REJECTED':
    case 'OMNI_ERR_TOO_LARGE':
      return 'refused';
    case 'OMNI_ERR_ABORTED':
      return 'aborted';
    case 'OMNI_ERR_DEADLINE':
      return 'deadline';
    case 'OMNI_ERR_WORKER_EXITED':
    case 'X_STRESS':
      return 'failed';
    default:
      return undefined;
  }
}

it.each([
  { wait: false, name: 'refusing' },
  { wait: true, name: 'waiting' },
])(
  '10,000 random tasks ($name admission): every call settles once, capacity returns, counts agree',
  async ({ wait }) => {
    const rt = await start({ threads: 2, admission: { requests: REQUESTS, units: UNITS, wait } });
    const generator = new Prng(SEED); // seeded: the same sequence for the same seed
    const random = (): number => generator.next();
    const invocations = newControl();
    const shared = invocations.buffer as SharedArrayBuffer;
    const counts: Record<Outcome, number> = { completed: 0, refused: 0, aborted: 0, deadline: 0, failed: 0 };
    const unexpected: unknown[] = [];
    let settled = 0;
    let maxDepth = 0;
    let maxUnits = 0;
    let next = 0;
    let admittedInFlight = 0;
    let refusedAtOnce = 0;
    const backingOff: Array<() => void> = [];
    const backOff = (): Promise<void> =>
      new Promise((resolve) => {
        if (admittedInFlight > 0) backingOff.push(resolve);
        else setImmediate(resolve);
      });

    async function caller(): Promise<void> {
      for (let i = next++; i < SUBMITTED; i = next++) {
        const r = random();
        const cost = r < 0.01 ? UNITS + 1 + Math.floor(random() * 10) : Math.floor(random() * 12);
        const fate = random();
        const mode = fate < 1 / 500 ? 'exit' : fate < 0.01 ? 'throw-coded' : 'echo';
        const leave = random();
        const ac = leave < 0.1 ? new AbortController() : undefined;
        const deadlineMs = leave >= 0.1 && leave < 0.15 ? 1 + Math.floor(random() * 3) : undefined;
        const rejectedBefore = rt.report().rejected;
        const call = rt.run<number>(
          { mode, control: shared, value: i, code: 'X_STRESS' },
          { cost, ...(ac ? { signal: ac.signal } : {}), ...(deadlineMs ? { deadlineMs } : {}) },
        );
        if (ac) {
          // Abort at different points: before dispatch reaches a thread, or while it may run.
          const when = random();
          if (when < 0.3) ac.abort();
          else if (when < 0.6) queueMicrotask(() => ac.abort());
          else setImmediate(() => ac.abort());
        }
        // Only this thread admits, and an immediate refusal is counted inside run() (a wait that
        // times out is counted later, never within this synchronous stretch): this is exact.
        const report = rt.report();
        const admitted = report.rejected === rejectedBefore;
        if (admitted) admittedInFlight++;
        else refusedAtOnce++;
        maxDepth = Math.max(maxDepth, report.depth);
        maxUnits = Math.max(maxUnits, report.units);
        try {
          const value = await call;
          if (value !== i || mode !== 'echo') unexpected.push({ i, mode, value });
          counts.completed++;
        } catch (err) {
          const code = (err as { code?: string }).code;
          const outcome = classify(code);
          if (outcome) counts[outcome]++;
          else unexpected.push(err);
          // One task per thread: a death fails only the call that caused it.
          if (code === 'OMNI_ERR_WORKER_EXITED' && mode !== 'exit') unexpected.push({ i, mode, code });
          if (code === 'X_STRESS' && mode !== 'throw-coded') unexpected.push({ i, mode, code });
          // A refusal settles in a microtask. Back off like a client would, until some admitted
          // call settles (or at least one turn), so callers do not spin through the indices.
          if (outcome === 'refused') await backOff();
        }
        if (admitted) {
          admittedInFlight--;
          for (const wake of backingOff.splice(0)) wake();
        }
        settled++;
      }
    }

    await Promise.all(Array.from({ length: CALLERS }, caller));
    expect(unexpected).toEqual([]);
    expect(settled).toBe(SUBMITTED);
    const total = counts.completed + counts.refused + counts.aborted + counts.deadline + counts.failed;
    expect(total).toBe(SUBMITTED);
    expect(counts.refused).toBe(refusedAtOnce); // every refusal was immediate, none after admission
    expect(maxDepth).toBeLessThanOrEqual(REQUESTS);
    expect(maxUnits).toBeLessThanOrEqual(UNITS);

    // Aborted and late callers settle before their work ends: wait for the work itself.
    await until(() => rt.report().depth === 0, 'depth 0');
    const report = rt.report();
    expect(report).toMatchObject({ depth: 0, units: 0, waiting: 0, leaked: 0, state: 'ready' });
    expect({
      completed: report.completed,
      refused: report.refused,
      aborted: report.aborted,
      deadline: report.deadline,
      failed: report.failed,
    }).toEqual(counts);
    if (wait) {
      // Waits that ran out of time count as refusals in the admission and as deadlines here.
      expect(report.rejected).toBeGreaterThanOrEqual(counts.refused);
      expect(report.rejected).toBeLessThanOrEqual(counts.refused + counts.deadline);
    } else {
      expect(report.rejected).toBe(counts.refused);
    }
    // Every outcome happened, and refused calls never reached a handler.
    for (const outcome of Object.keys(counts) as Outcome[]) expect(counts[outcome]).toBeGreaterThan(0);
    const invoked = Atomics.load(invocations, INVOKED);
    expect(invoked).toBeGreaterThanOrEqual(counts.completed);
    expect(invoked).toBeLessThanOrEqual(SUBMITTED - counts.refused);

    // Still serving, and a clean drain.
    await expect(rt.run({ mode: 'echo', value: -1 })).resolves.toBe(-1);
    await rt.close();
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, units: 0 });
  },
);
