import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BoundedAdmission } from '../src/index.js';
import { Close, commands, Release, ReleaseClaim } from './fixtures/admission-async-commands.js';
import {
  CONTROLLERS,
  type Command,
  countIntervals,
  forgetIntervals,
  type Model,
  type Real,
  restoreIntervals,
} from './fixtures/admission-async-model.js';

const SEED = Number(process.env.ADMISSION_ASYNC_MODEL_SEED ?? 0x5eed);
const RUNS = Number(process.env.ADMISSION_ASYNC_MODEL_RUNS ?? 800);

/**
 * Model-based test of waiting admission: random command sequences of tryAdmit, admit (with a
 * signal and a timeout), releases, claims released through either instance, aborts, timeouts
 * and close() run on two instances attached to one buffer (as two threads would hold), and
 * against a sequential model of what the doc comments promise:
 * - each instance has a FIFO of waiters; its head is admitted as soon as it fits;
 * - a release wakes its own instance's heads at once and the other's through the shared wake-up
 *   word (within a bounded number of event-loop turns: a lost wake-up never settles);
 * - tryAdmit refuses while any instance has waiters: 'queued' when the cost would fit the counts,
 *   else 'requests' or 'units' as without waiters;
 * - `rejected` counts refusals, timeouts, too-large and closed, never aborts;
 * - after close every waiter rejects OMNI_ERR_CLOSED, and close() resolves at depth 0;
 * - an instance holds the process open exactly while it has waiters or an unsettled drain.
 * report() is compared once things have settled, and once more in the moment right after a
 * release (ReleaseThen): there the releasing instance has tried its heads (BoundedAdmission
 * #wake does so within the release) and the other's wake-up is still on its way, the window in
 * which a tryAdmit must not take the room. The moment while the WAITING flag is cleared and
 * re-set lies inside one synchronous call here, where no command can run: it is not modelled.
 *
 * The model and the real side are in test/fixtures/admission-async-model.ts, the commands in
 * test/fixtures/admission-async-commands.ts.
 *
 * Timeouts run on fake setTimeout (setLongTimeout reads the global at each call), so a chosen
 * waiter's deadline is reached by advancing the fake clock; deadlines are kept distinct so the
 * order in which timers fire is the model's order too. setImmediate stays real: `turn` and the
 * Atomics.waitAsync wake-ups are real event-loop work.
 */

async function runModel(bounds: { requests: number; units?: number | undefined }, cmds: Iterable<Command>) {
  forgetIntervals(); // a failed run's holds are not this run's
  const a = new BoundedAdmission(bounds);
  const real: Real = {
    inst: [a, BoundedAdmission.attach(a.buffer)],
    held: new Map(),
    claims: [],
    controllers: Array.from({ length: CONTROLLERS }, () => new AbortController()),
    waiters: new Map(),
    drains: [],
  };
  const model: Model = {
    requests: bounds.requests,
    ceiling: bounds.units ?? null,
    depth: 0,
    units: 0n,
    rejected: 0,
    closed: false,
    queues: [[], []],
    held: [],
    claims: [],
    generations: Array.from({ length: CONTROLLERS }, () => 0),
    now: 0,
    nextId: 0,
    drains: [0, 0],
    settled: [],
    stale: undefined,
  };
  await fc.asyncModelRun(() => ({ model, real }), cmds);
  // Ends the run as a user would: close, then give everything back; the last step must settle
  // every waiter (closed) and every drain, leaving no handle behind.
  await new Close(1).run(model, real);
  while (model.held.length > 0) await new Release(0, false).run(model, real);
  while (model.claims.length > 0) await new ReleaseClaim(0, 0, false).run(model, real);
  expect(real.waiters.size).toBe(0);
  expect(real.drains.every((d) => d.state.settled)).toBe(true);
}

describe('admit() waiting across two attached instances, against a sequential model', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    countIntervals();
  });
  afterEach(() => {
    vi.useRealTimers();
    restoreIntervals();
  });

  it('with a unit ceiling (narrow and wide state words)', async () => {
    const bounds = fc.oneof(
      fc.record({ requests: fc.integer({ min: 1, max: 3 }), units: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ requests: fc.integer({ min: 1, max: 3 }), units: fc.constant(2 ** 40) }),
    );
    await fc.assert(
      fc.asyncProperty(bounds, commands, (b, cmds) => runModel(b, cmds)),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it('in request-only mode', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 }), commands, (requests, cmds) =>
        runModel({ requests }, cmds),
      ),
      { numRuns: Math.ceil((RUNS * 3) / 4), seed: SEED },
    );
  });
});
