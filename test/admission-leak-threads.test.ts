/**
 * The leak safety net where an admission is shared: a permit dropped together with the instance
 * that admitted it (an attached one made for one task, on a worker thread or in this one), and a
 * permit still held when its thread ends. vitest.config.ts starts the test processes with
 * --expose-gc (worker threads inherit it); every wait is a bounded number of collections.
 */
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { BoundedAdmission, type Claim } from '../src/index.js';
import { settles, turn, WORD_MODES } from './fixtures/admission-interleave.js';
import { attachedWorker, builtIndexExists } from './fixtures/attached-worker.js';
import { collectUntil } from './fixtures/collect-until.js';

const gc = (globalThis as { gc?: () => void }).gc;

/** An instance attached for one task that admits `cost` and drops the permit and itself. */
function dropWithInstance(buffer: SharedArrayBuffer, cost: number): void {
  const result = BoundedAdmission.attach(buffer).tryAdmit(cost);
  if (!result.ok) throw new Error(`expected admission of ${cost}, refused: ${result.reason}`);
}

describe.each(WORD_MODES)('a permit dropped with its instance (%s)', (_mode, units) => {
  const unitsOf = (n: number): number => (units === undefined ? 0 : n);

  it('is given back to the instances that live on', async () => {
    const owner = new BoundedAdmission({ requests: 2, units });
    dropWithInstance(owner.buffer, 7);
    expect(owner.report()).toMatchObject({ depth: 1, units: unitsOf(7), leaked: 0 });
    await collectUntil(() => owner.report().leaked > 0);
    expect(owner.report()).toMatchObject({ depth: 0, units: 0, leaked: 1, rejected: 0 });
    // The capacity is really back: the whole bound can be taken again.
    const all = [owner.tryAdmit(1), owner.tryAdmit(units === undefined ? 1 : 9)];
    expect(all.map((p) => p.ok)).toEqual([true, true]);
    for (const p of all) if (p.ok) p.release();
  });

  it("wakes another instance's waiter with it", async () => {
    const owner = new BoundedAdmission({ requests: 1, units });
    dropWithInstance(owner.buffer, 1);
    const waiter = owner.admit(1);
    expect(owner.report()).toMatchObject({ depth: 1, waiting: 1 });
    await collectUntil(() => owner.report().leaked > 0);
    // Woken through the shared word (the dropped instance has no room); a lost wake never settles.
    const permit = await settles(waiter);
    expect(owner.report()).toMatchObject({ depth: 1, units: unitsOf(1), waiting: 0, leaked: 1 });
    permit.release();
    expect(owner.report()).toMatchObject({ depth: 0, units: 0 });
  });
});

// The task's instance and its forgotten permit are dropped in the worker, which then collects
// until the main thread's instance reports the leak (bounded) and says how it ended.
const PER_TASK_SOURCE = `
const { workerData } = require('node:worker_threads');
(async () => {
  const { BoundedAdmission } = await import(workerData.url);
  const control = new Int32Array(workerData.control);
  (() => {
    const task = BoundedAdmission.attach(workerData.buffer);
    if (!task.tryAdmit(1).ok) throw new Error('refused');
  })();
  const view = BoundedAdmission.attach(workerData.buffer); // made after: not the dropped one
  let tries = 0;
  while (view.report().leaked === 0 && tries++ < 200) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  Atomics.store(control, 0, view.report().leaked === 0 ? 2 : 1);
})();
`;

/** A worker that takes one permit it still holds when it ends, and one it moves into a claim. */
const ENDS_HOLDING_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
(async () => {
  const { BoundedAdmission } = await import(workerData.url);
  const admission = BoundedAdmission.attach(workerData.buffer);
  globalThis.held = admission.tryAdmit(3);
  parentPort.postMessage(admission.tryAdmit(4).toClaim());
})();
`;

describe('across worker threads', () => {
  it('has dist built (npm run build:ts)', () => {
    expect(builtIndexExists()).toBe(true);
  });

  it('gives back a permit a worker dropped with the instance it attached for one task', async () => {
    const owner = new BoundedAdmission({ requests: 1 });
    const control = new Int32Array(new SharedArrayBuffer(4));
    const worker = attachedWorker(PER_TASK_SOURCE, owner.buffer, control);
    const [code] = await once(worker, 'exit');
    expect(code).toBe(0);
    expect(Atomics.load(control, 0)).toBe(1); // 2: still not given back after 200 collections
    expect(owner.report()).toMatchObject({ depth: 0, leaked: 1 });
  });

  // Surprising but right: a thread's finalizers never run once it has ended, and a plain permit
  // has no shared record to recover it from; a claim has one, for the owner's reclaim().
  it('loses a permit still held when its thread ends; a claim can be reclaimed', async () => {
    const owner = new BoundedAdmission({ requests: 3, units: 10 });
    const worker = attachedWorker(ENDS_HOLDING_SOURCE, owner.buffer);
    const exited = once(worker, 'exit');
    const [claim] = (await once(worker, 'message')) as [Claim];
    const [code] = await exited;
    expect(code).toBe(0);
    expect(owner.report()).toMatchObject({ depth: 2, units: 7 });
    expect(owner.reclaim(claim)).toBe(true);
    for (let i = 0; i < 20; i++) {
      gc?.();
      await turn();
    }
    expect(owner.report()).toMatchObject({ depth: 1, units: 3, leaked: 0 });
  });
});
