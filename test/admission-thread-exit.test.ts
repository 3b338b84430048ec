/**
 * A worker thread whose admit() waiters gave up ends by itself: its instance's wait on the shared
 * word stays pending (nothing notifies it while nobody waits), and that wait must not keep the
 * thread alive, while the admission's own hold, gone with the last waiter, must not either.
 */
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { BoundedAdmission } from '../src/index.js';
import { admitted, WORD_MODES } from './fixtures/admission-interleave.js';
import { attachedWorker, builtIndexExists } from './fixtures/attached-worker.js';

// Control words 0 and 1: 1 when the aborted waiter, then the timed-out one, rejected with the
// expected code (2 otherwise). No other handle is left: only a wrong hold keeps the thread.
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
(async () => {
  const { BoundedAdmission } = await import(workerData.url);
  const control = new Int32Array(workerData.control);
  const admission = BoundedAdmission.attach(workerData.buffer);
  const controller = new AbortController();
  const aborted = admission.admit(1, { signal: controller.signal });
  controller.abort();
  await aborted.catch((err) => Atomics.store(control, 0, err.code === 'OMNI_ERR_ABORTED' ? 1 : 2));
  await admission.admit(1, { timeoutMs: 0 })
    .catch((err) => Atomics.store(control, 1, err.code === 'OMNI_ERR_TIMEOUT' ? 1 : 2));
})();
`;

describe.each(WORD_MODES)('a worker whose waiters gave up (%s)', (_mode, units) => {
  it('has dist built (npm run build:ts)', () => {
    expect(builtIndexExists()).toBe(true);
  });

  it('exits by itself, leaving nothing queued', async () => {
    const owner = new BoundedAdmission({ requests: 1, units });
    const held = admitted(owner, 1);
    const control = new Int32Array(new SharedArrayBuffer(8));
    const worker = attachedWorker(WORKER_SOURCE, owner.buffer, control);
    const [code] = await once(worker, 'exit');
    expect(code).toBe(0);
    expect([Atomics.load(control, 0), Atomics.load(control, 1)]).toEqual([1, 1]);
    expect(owner.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 1 });
    held.release();
    expect(owner.tryAdmit(1).ok).toBe(true); // no WAITING flag left behind: not 'queued'
  });
});
