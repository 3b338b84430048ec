/**
 * close() called on an attached instance, in a worker thread: it closes the one shared bound,
 * for every instance, and its drain waits for what every thread holds. Threads are ordered by
 * control words (bounded waits), never by time.
 */
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { BoundedAdmission } from '../src/index.js';
import { admitted, rejection, settles, WORD_MODES } from './fixtures/admission-interleave.js';
import { attachedWorker, builtIndexExists, controlAfter } from './fixtures/attached-worker.js';

// Control words: CLOSING once close() has returned, DRAINED once its promise resolved. No other
// handle: while it drains, only the admission's own hold keeps this thread alive.
const CLOSING = 0;
const DRAINED = 1;
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
(async () => {
  const { BoundedAdmission } = await import(workerData.url);
  const control = new Int32Array(workerData.control);
  const drained = BoundedAdmission.attach(workerData.buffer).close();
  Atomics.store(control, ${CLOSING}, 1);
  Atomics.notify(control, ${CLOSING});
  await drained;
  Atomics.store(control, ${DRAINED}, 1);
  Atomics.notify(control, ${DRAINED});
})();
`;

describe.each(WORD_MODES)('close() on an attached instance in a worker (%s)', (_mode, units) => {
  it('has dist built (npm run build:ts)', () => {
    expect(builtIndexExists()).toBe(true);
  });

  it("closes the bound for every instance; its drain waits for another thread's permit", async () => {
    const owner = new BoundedAdmission({ requests: 1, units });
    const held = admitted(owner, 1);
    const turnedAway = rejection(owner.admit(1));
    const control = new Int32Array(new SharedArrayBuffer(8));
    const worker = attachedWorker(WORKER_SOURCE, owner.buffer, control);
    const exited = once(worker, 'exit');
    expect(await controlAfter(control, CLOSING)).toBe(1);
    // The owner's waiter is woken through the shared word and turned away, counted.
    expect((await settles(turnedAway)).code).toBe('OMNI_ERR_CLOSED');
    expect(owner.closed).toBe(true);
    expect(owner.tryAdmit(0)).toEqual({ ok: false, reason: 'closed' });
    expect(owner.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 2 });
    expect(Atomics.load(control, DRAINED)).toBe(0); // the owner's permit is still out
    held.release();
    expect(await controlAfter(control, DRAINED)).toBe(1);
    expect((await exited)[0]).toBe(0);
  });
});
