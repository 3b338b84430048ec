/**
 * close() called on an attached instance, in a worker thread: it closes the one shared bound,
 * for every instance, and its drain waits for what every thread holds. Threads are ordered by
 * control words (bounded waits), never by time.
 */
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { BoundedAdmission } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { admitted, rejection, settles, WORD_MODES } from './fixtures/admission-interleave.js';

const indexUrl = builtModuleUrl('src/index.js');

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

async function untilSet(control: Int32Array, index: number): Promise<void> {
  const wait = Atomics.waitAsync(control, index, 0, 30_000);
  if (wait.async) await wait.value;
  if (Atomics.load(control, index) !== 1) throw new Error(`control[${index}] was never set`);
}

describe.each(WORD_MODES)('close() on an attached instance in a worker (%s)', (_mode, units) => {
  it('has dist built (npm run build:ts)', () => {
    expect(existsSync(fileURLToPath(indexUrl))).toBe(true);
  });

  it("closes the bound for every instance; its drain waits for another thread's permit", async () => {
    const owner = new BoundedAdmission({ requests: 1, units });
    const held = admitted(owner, 1);
    const turnedAway = rejection(owner.admit(1));
    const control = new Int32Array(new SharedArrayBuffer(8));
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { url: indexUrl, buffer: owner.buffer, control: control.buffer },
    });
    const exited = once(worker, 'exit');
    await untilSet(control, CLOSING);
    // The owner's waiter is woken through the shared word and turned away, counted.
    expect((await settles(turnedAway)).code).toBe('OMNI_ERR_CLOSED');
    expect(owner.closed).toBe(true);
    expect(owner.tryAdmit(0)).toEqual({ ok: false, reason: 'closed' });
    expect(owner.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 2 });
    expect(Atomics.load(control, DRAINED)).toBe(0); // the owner's permit is still out
    held.release();
    await untilSet(control, DRAINED);
    expect((await exited)[0]).toBe(0);
  });
});
