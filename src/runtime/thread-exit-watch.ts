import type { Worker } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import type { ThreadEnds } from './thread-ends.js';
import { onThreadStart } from './thread-starts.js';

/**
 * Tells `ends` of the exit of every thread the pool starts. A Worker's threadId reads -1 once it
 * has exited, so each is noted while it is alive: when Node tells of its start (a tick after it
 * was made, before it can have exited), whether or not it ever comes up, so one that ends in its
 * init is reported too. piscina emits nothing for a thread before its ready message. A thread
 * removed from the pool before that tick (a destroy() in the turn it was made) is noted as it is
 * removed, while it is still alive. Returns the way to stop hearing of starts, once the pool can
 * start no more threads (it has been destroyed).
 */
export function watchThreadExits(pool: Piscina, ends: ThreadEnds): () => void {
  const watched = new WeakSet<Worker>();
  const watch = (worker: Worker): void => {
    const id = worker.threadId;
    if (id === -1 || watched.has(worker)) return;
    watched.add(worker);
    worker.once('exit', () => ends.exited(id));
  };
  // Emitted before the removed thread leaves pool.threads.
  pool.on('workerDestroy', () => {
    for (const worker of pool.threads) watch(worker);
  });
  return onThreadStart((worker) => {
    if (pool.threads.includes(worker)) watch(worker);
  });
}
