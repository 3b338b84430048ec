/**
 * Waiting is FIFO per instance, not across threads: room that comes free goes to whichever
 * thread tries first, so a later admit() on one thread can take it before an earlier waiter on
 * another. The worker's loop is held busy (blocked on a control word) while the room comes free,
 * which forces the order; nothing is ordered by time.
 */
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { BoundedAdmission } from '../src/index.js';
import { admitted, settles, WORD_MODES } from './fixtures/admission-interleave.js';
import { attachedWorker, builtIndexExists, controlAfter } from './fixtures/attached-worker.js';

// Control words: QUEUED once the worker's admit() is asleep, GATE opened by the test, OUTCOME 1
// when the worker was admitted (2 for anything else).
const QUEUED = 0;
const GATE = 1;
const OUTCOME = 2;
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
(async () => {
  const { BoundedAdmission } = await import(workerData.url);
  const control = new Int32Array(workerData.control);
  const admission = BoundedAdmission.attach(workerData.buffer);
  const waiter = admission.admit(1); // tries, fails and arms its wait before it returns
  Atomics.store(control, ${QUEUED}, 1);
  Atomics.notify(control, ${QUEUED});
  Atomics.wait(control, ${GATE}, 0, 30_000); // a busy loop: no wake-up can run meanwhile
  try {
    (await waiter).release();
    Atomics.store(control, ${OUTCOME}, 1);
  } catch {
    Atomics.store(control, ${OUTCOME}, 2);
  }
})();
`;

describe.each(WORD_MODES)('waiters on two threads (%s)', (_mode, units) => {
  it('has dist built (npm run build:ts)', () => {
    expect(builtIndexExists()).toBe(true);
  });

  it('a later admit() on one thread can take room before an earlier waiter on another', async () => {
    const owner = new BoundedAdmission({ requests: 1, units });
    const held = admitted(owner, 1);
    const control = new Int32Array(new SharedArrayBuffer(12));
    const worker = attachedWorker(WORKER_SOURCE, owner.buffer, control);
    const exited = once(worker, 'exit');
    try {
      expect(await controlAfter(control, QUEUED)).toBe(1);
      expect(owner.report()).toMatchObject({ depth: 1, waiting: 1 });
      held.release(); // notifies the worker, whose loop cannot act on it yet
      const later = await settles(owner.admit(1));
      expect(owner.report()).toMatchObject({ depth: 1, waiting: 1 });
      Atomics.store(control, GATE, 1);
      Atomics.notify(control, GATE);
      later.release(); // now the worker's waiter, still queued, is admitted
      expect((await exited)[0]).toBe(0);
      expect(Atomics.load(control, OUTCOME)).toBe(1);
      expect(owner.report()).toMatchObject({ depth: 0, units: 0, waiting: 0, rejected: 0 });
    } finally {
      Atomics.store(control, GATE, 1);
      Atomics.notify(control, GATE);
      await worker.terminate();
    }
  });
});
