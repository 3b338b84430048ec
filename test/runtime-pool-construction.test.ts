/**
 * piscina's constructor starts a runtime's threads one by one; Node can fail to create one part
 * way (no memory or thread left for it). The threads already made then have no pool to end them:
 * start() must end them itself, tell threadEnds, and reject with a code. The failure is made by
 * the MessageChannel piscina creates for each thread (node:worker_threads' own exports object,
 * the one piscina's require() reads), failing for the second.
 */
import workerThreads, { type Worker } from 'node:worker_threads';
import { afterEach, expect, it } from 'vitest';
import { Runtime } from '../src/index.js';
import { GATED_WORKER, rejection, until } from './fixtures/runtime-harness.js';
import { recorder, STOPPED } from './fixtures/thread-ends-recorder.js';

const RealChannel = workerThreads.MessageChannel;

afterEach(() => {
  workerThreads.MessageChannel = RealChannel;
});

/** Every worker thread created from now on, with its id (a Worker's reads -1 once it exited). */
function watchCreated(): { workers: Worker[]; ids: number[]; stop: () => void } {
  const workers: Worker[] = [];
  const ids: number[] = [];
  const listener = (worker: Worker): void => {
    workers.push(worker);
    ids.push(worker.threadId);
  };
  process.on('worker', listener);
  return { workers, ids, stop: () => process.off('worker', listener) };
}

/** piscina's channel for its `failAt`-th new thread (from 1) throws. */
function failingChannelAt(failAt: number): Error {
  const failure = new Error('cannot create another thread');
  let made = 0;
  workerThreads.MessageChannel = class extends RealChannel {
    constructor() {
      if (new Error().stack?.includes('_addNewWorker') === true && ++made === failAt) throw failure;
      super();
    }
  };
  return failure;
}

it.each([
  [1, 0],
  [3, 2],
])(
  'a thread that cannot be created (number %i): the %i made are ended and reported',
  async (failAt, madeBefore) => {
    const { log, ends } = recorder();
    const created = watchCreated();
    const failure = failingChannelAt(failAt);
    const err = await rejection(Runtime.start({ worker: GATED_WORKER, threads: 4, threadEnds: ends }));
    workerThreads.MessageChannel = RealChannel;
    created.stop();
    expect(err.code).toBe('OMNI_ERR_WORKER_EXITED');
    expect(err.cause).toBe(failure);
    expect(created.workers).toHaveLength(madeBefore);
    // Before: the error escaped uncoded, and the threads made before it idled for good.
    await until(() => created.workers.every((w) => w.threadId === -1), 'the threads made to exit');
    expect(log.slice(0, -1).sort()).toEqual([...created.ids].sort());
    expect(log.at(-1)).toBe(STOPPED);
  },
);
