/**
 * watchThreadExits (thread-exit-watch.ts) notes a thread when Node tells of its start, a tick
 * after it was made. A thread the pool removes before that tick (a destroy() in the turn it was
 * made) has left pool.threads by then, so it is noted as it is removed, while it is still alive:
 * its exit is told to `ends` all the same. No runtime path is known to destroy its pool in the
 * turn it made a thread (close(), a failed start() and an abandoned pool destroy it after an
 * await or a microtask, past Node's ticks), so the watch is driven here on a bare pool, destroyed
 * in the turn its constructor made its threads.
 */
import { Piscina } from 'piscina';
import { expect, it } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { watchThreadExits } from '../src/runtime/thread-exit-watch.js';

// Mutant: no 'workerDestroy' watch (thread-exit-watch.ts): neither thread's exit was told.
it('threads destroyed in the turn their pool made them: each exit told once, with its id', async () => {
  const exited: number[] = [];
  let stopped = 0;
  const pool = new Piscina({
    filename: builtModuleUrl('test/fixtures/echo-worker.js'),
    minThreads: 2,
    maxThreads: 2,
  });
  pool.on('error', () => {});
  const unwatch = watchThreadExits(pool, {
    exited: (id) => exited.push(id),
    stopped: () => stopped++,
  });
  const ids = pool.threads.map((thread) => thread.threadId);
  expect(ids).toHaveLength(2);
  // In this turn, before Node's 'worker' ticks: piscina removes both threads synchronously.
  const destroyed = pool.destroy();
  expect(pool.threads).toHaveLength(0);
  // destroy() resolves once both threads have exited; the watch's exit listeners ran by then.
  await destroyed;
  unwatch();
  expect(exited.sort()).toEqual([...ids].sort());
  expect(stopped).toBe(0);
});
