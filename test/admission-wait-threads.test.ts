/**
 * admit() across real threads: a waiter in a worker woken by a release on the main thread and
 * the other way round, close() rejecting a worker's waiter, and a drain settled by a release in
 * a worker. The worker is test/fixtures/admission-wait-worker.ts; the threads are ordered by
 * control words (test/fixtures/admission-wait-layout.ts), never by time.
 */
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { BoundedAdmission } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { admitted, isStateWord, track, turn, WORD_MODES } from './fixtures/admission-interleave.js';

import {
  ADMITTED,
  CLOSED,
  GO,
  HOLDING,
  OUTCOME,
  QUEUED,
  SETTLED,
  STEP,
  UNITS,
} from './fixtures/admission-wait-layout.js';
import { attachedWorker, builtIndexExists, controlAfter } from './fixtures/attached-worker.js';

const workerUrl = builtModuleUrl('test/fixtures/admission-wait-worker.js');

interface StartedWorker {
  worker: Worker;
  control: Int32Array;
  exited: Promise<number>;
  errors: unknown[];
}

function startWorker(mode: 'wait' | 'hold', admission: BoundedAdmission, cost: number): StartedWorker {
  const control = new Int32Array(new SharedArrayBuffer(16));
  const worker = new Worker(new URL(workerUrl), {
    workerData: { mode, buffer: admission.buffer, control: control.buffer, cost },
  });
  const errors: unknown[] = [];
  worker.on('error', (err) => errors.push(err));
  const exited = once(worker, 'exit').then(([code]) => code as number);
  return { worker, control, exited, errors };
}

/**
 * Resolves once control[index] === expected. Fails at once if the worker exits first (and,
 * as a guard against a hang, after a generous bound; nothing is ordered by time).
 */
async function until({ control, exited }: StartedWorker, index: number, expected: number): Promise<void> {
  const reached = (async () => {
    for (;;) {
      const seen = Atomics.load(control, index);
      if (seen === expected) return;
      const wait = Atomics.waitAsync(control, index, seen, 30_000);
      if ((wait.async ? await wait.value : wait.value) === 'timed-out') {
        throw new Error(`control[${index}] stayed ${seen}, expected ${expected}`);
      }
    }
  })();
  const exitedFirst = exited.then((code) => {
    if (Atomics.load(control, index) !== expected) {
      throw new Error(`worker exited with code ${code} before control[${index}] reached ${expected}`);
    }
  });
  await Promise.race([reached, exitedFirst]);
}

/**
 * Resolves once the worker's event loop has sat idle (blocked waiting for events) since now.
 * A waiting thread whose loop holds nothing would exit instead of idling (Node 20: a pending
 * Atomics.waitAsync keeps nothing alive), so this fails, deterministically, if the admission
 * does not hold a handle while it has waiters.
 */
async function untilIdle({ worker, exited }: StartedWorker): Promise<void> {
  let exitCode: number | undefined;
  void exited.then((code) => {
    exitCode = code;
  });
  const base = worker.performance.eventLoopUtilization();
  for (let turns = 0; turns < 1_000_000; turns++) {
    if (exitCode !== undefined) throw new Error(`worker exited (code ${exitCode}) while it was waiting`);
    if (worker.performance.eventLoopUtilization(base).idle > 0) return;
    await turn();
  }
  throw new Error('worker never went idle');
}

describe.each([
  ['request-only', undefined],
  ['with units', 10],
])('admit across threads (%s)', (_mode, units) => {
  it('has the worker fixture built (npx tsc -p tsconfig.json)', () => {
    expect(existsSync(fileURLToPath(workerUrl))).toBe(true);
  });

  it('wakes a waiter in a worker thread when the main thread releases; the worker stays alive', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const started = startWorker('wait', admission, 7);
    const { control, exited, errors } = started;
    await until(started, STEP, QUEUED);
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 1 });
    // Full: 'requests' ('queued' only where the cost would fit beside what is held).
    expect(admission.tryAdmit(1)).toEqual({ ok: false, reason: 'requests' });
    await untilIdle(started);
    holder.release();
    await until(started, STEP, SETTLED);
    expect(await exited).toBe(0);
    expect(errors).toEqual([]);
    expect(Atomics.load(control, OUTCOME)).toBe(ADMITTED);
    expect(Atomics.load(control, UNITS)).toBe(7);
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0, rejected: 1 });
  });

  it('wakes a waiter on the main thread when a worker releases', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const started = startWorker('hold', admission, 4);
    const { control, exited, errors } = started;
    await until(started, STEP, HOLDING);
    expect(admission.report()).toMatchObject({ depth: 1, units: units === undefined ? 0 : 4 });
    const waiter = admission.admit(6);
    const pending = track(waiter);
    await turn();
    expect(pending.settled).toBe(false);
    expect(admission.report()).toMatchObject({ waiting: 1 });
    Atomics.store(control, GO, 1);
    Atomics.notify(control, GO);
    // Woken by the other thread's release (through the shared sequence word), not by a timer.
    const permit = await waiter;
    expect(permit.units).toBe(6);
    expect(await exited).toBe(0);
    expect(errors).toEqual([]);
    expect(Atomics.load(control, STEP)).toBe(SETTLED);
    expect(admission.report()).toMatchObject({ depth: 1, units: units === undefined ? 0 : 6, waiting: 0 });
    permit.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0 });
  });

  it('close() on the main thread rejects a waiter in a worker with OMNI_ERR_CLOSED', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const started = startWorker('wait', admission, 1);
    const { control, exited, errors } = started;
    await until(started, STEP, QUEUED);
    await untilIdle(started);
    const drained = track(admission.close());
    await until(started, STEP, SETTLED);
    expect(await exited).toBe(0);
    expect(errors).toEqual([]);
    expect(Atomics.load(control, OUTCOME)).toBe(CLOSED);
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 1 });
    await turn();
    expect(drained.settled).toBe(false);
    holder.release();
    await turn();
    expect(drained.settled).toBe(true);
  });

  it("close()'s drain resolves on a release in a worker thread", async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const started = startWorker('hold', admission, 1);
    const { control, exited } = started;
    await until(started, STEP, HOLDING);
    const drainedPromise = admission.close();
    const drained = track(drainedPromise);
    await turn();
    expect(drained.settled).toBe(false);
    Atomics.store(control, GO, 1);
    Atomics.notify(control, GO);
    expect(await exited).toBe(0);
    // The worker's release bumped the shared sequence; the main thread's watch settles the drain.
    await drainedPromise;
    expect(drained.settled).toBe(true);
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0 });
  });
});

// Kills: bounded-admission.ts close() waking before it sets CLOSED: another thread's waiter woken
// by that wake retries before the flag is up, goes back to sleep, and nothing wakes it again.
// A real worker thread; the main thread's close() is held (SharedArrayBuffer handshake, bounded)
// between its two steps only when it has already notified, which the real order never does.
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
(async () => {
  const control = new Int32Array(workerData.control);
  const realWaitAsync = Atomics.waitAsync;
  Atomics.waitAsync = (array, index, value, timeout) => {
    const result = realWaitAsync(array, index, value, timeout);
    if (array.buffer === workerData.buffer) {
      Atomics.add(control, 0, 1); // the waiter went (back) to sleep
      Atomics.notify(control, 0);
    }
    return result;
  };
  let outcome = 3;
  try {
    const { BoundedAdmission } = await import(workerData.url);
    const admission = BoundedAdmission.attach(workerData.buffer);
    (await admission.admit(1)).release();
    outcome = 2;
  } catch (err) {
    outcome = err && err.code === 'OMNI_ERR_CLOSED' ? 1 : 3;
  }
  Atomics.store(control, 1, outcome);
  Atomics.notify(control, 1);
})();
`;

describe.each(WORD_MODES)('close() across threads (%s)', (_mode, units) => {
  it('has dist built (npm run build:ts)', () => {
    expect(builtIndexExists()).toBe(true);
  });

  it('sets CLOSED before waking, so a waiter in another thread that wakes at once is rejected', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const control = new Int32Array(new SharedArrayBuffer(8));
    const worker = attachedWorker(WORKER_SOURCE, admission.buffer, control);
    const realOr = Atomics.or;
    const realNotify = Atomics.notify;
    try {
      // Bounded handshake: the worker's waiter is queued and asleep.
      expect(await controlAfter(control, 0)).toBe(1);
      expect(admission.report()).toMatchObject({ waiting: 1 });
      let notified = false;
      let held = false;
      Atomics.notify = ((array: Int32Array, index: number, count?: number) => {
        if (array.buffer === admission.buffer) notified = true;
        return realNotify(array, index, count);
      }) as typeof Atomics.notify;
      Atomics.or = ((array: Int32Array, index: number, value: number) => {
        if (!held && notified && isStateWord(array, index, admission.buffer)) {
          held = true; // woken before the flag: let the worker retry and sleep again first
          Atomics.wait(control, 0, 1, 30_000);
        }
        return realOr(array, index, value);
      }) as typeof Atomics.or;
      let drained: Promise<void>;
      try {
        drained = admission.close();
      } finally {
        Atomics.or = realOr;
        Atomics.notify = realNotify;
      }
      // Bounded: the real order rejects the worker's waiter at once; a lost wake-up never does.
      expect(await controlAfter(control, 1)).toBe(1); // 1: OMNI_ERR_CLOSED
      expect(held).toBe(false);
      holder.release();
      await drained;
      expect(admission.report()).toMatchObject({ depth: 0, waiting: 0 });
    } finally {
      Atomics.or = realOr;
      Atomics.notify = realNotify;
      await worker.terminate();
    }
  });
});
