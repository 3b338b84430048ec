import type { Worker } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import type { ThreadEnds } from './thread-ends.js';

/**
 * Tells `ends` of each thread's exit. A Worker's threadId reads -1 once it has exited, so each is
 * noted while it is alive: at every thread that comes up or is removed, and just after a removal
 * (when piscina has made its replacement), every thread in the pool not yet watched is. A thread
 * created and exited between two of those events is missed: only `stopped` covers it. Only one
 * piscina starts for a call can be: it does so once a replacement has ended before its ready
 * message (it replaces no thread after that), and emits nothing for it before its own ready
 * message, which comes after its init.
 */
export function watchThreadExits(pool: Piscina, ends: ThreadEnds): void {
  const watched = new WeakSet<Worker>();
  const watchAll = (): void => {
    for (const worker of pool.threads) {
      const id = worker.threadId;
      if (id === -1 || watched.has(worker)) continue;
      watched.add(worker);
      worker.once('exit', () => ends.exited(id));
    }
  };
  pool.on('workerCreate', watchAll);
  pool.on('workerDestroy', () => {
    // Emitted before the removed thread leaves pool.threads: one still alive is watched here.
    watchAll();
    // Its replacement is made in the same turn, after this event, and is heard of again only
    // once ready: one that ends in its init (removed once exited) would go unwatched.
    queueMicrotask(watchAll);
  });
}
