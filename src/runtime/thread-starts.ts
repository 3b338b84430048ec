import type { Worker } from 'node:worker_threads';

/**
 * Tells each listener of every worker thread created in this thread, by Node's process 'worker'
 * event (a tick after the Worker is constructed, by which time piscina has it in its pool).
 * piscina emits nothing for a thread it starts until that thread is ready, which in the
 * runtime's entry is after the worker's init: one whose init never finishes would go unseen.
 * One process listener serves every runtime (past ten, one each would warn of a leak), held only
 * while some runtime listens, so a closed runtime leaves nothing on `process`.
 */
const listeners = new Set<(worker: Worker) => void>();

function tell(worker: Worker): void {
  for (const listener of listeners) listener(worker);
}

/** Calls `listener` with every worker thread created from now on; returns the way to stop. */
export function onThreadStart(listener: (worker: Worker) => void): () => void {
  if (listeners.size === 0) process.on('worker', tell);
  listeners.add(listener);
  return () => {
    if (listeners.delete(listener) && listeners.size === 0) process.off('worker', tell);
  };
}

/**
 * `make()`'s value. When it throws instead, the worker threads it had created (piscina's
 * constructor starts its threads one by one, and Node can fail to create one part way) are
 * terminated before the throw goes on, with `exited` for each: nothing else holds them, so they
 * would idle for good. Node tells of each by process 'worker' a tick after creating it, in
 * creation order: those it tells of between a tick queued before `make` and one queued after it
 * threw are the ones `make` created.
 */
export async function endingThreadsOnThrow<T>(
  make: () => T,
  exited?: (threadId: number) => void,
): Promise<T> {
  let began = false;
  process.nextTick(() => {
    began = true;
  });
  try {
    return make();
  } catch (err) {
    const made: Worker[] = [];
    const collect = (worker: Worker): void => {
      if (began) made.push(worker);
    };
    process.on('worker', collect);
    await new Promise<void>((resolve) => process.nextTick(resolve));
    process.off('worker', collect);
    await Promise.all(
      made.map(async (worker) => {
        const id = worker.threadId;
        // Its pool is unreachable (its constructor threw) but still listens: at the thread's
        // 'exit' or 'error' it would start another in its place, which nothing would end.
        worker.removeAllListeners('exit');
        worker.removeAllListeners('error');
        worker.on('error', () => {});
        await worker.terminate();
        exited?.(id);
      }),
    );
    throw err;
  }
}
