import type { Worker } from 'node:worker_threads';
import { exitedWithin, stoppedOnceExited } from './terminated-exits.js';
import type { ThreadEnds } from './thread-ends.js';

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
 * terminated before the throw goes on: nothing else holds them, so they would idle for good.
 * Node tells of each by process 'worker' a tick after creating it, in creation order: those it
 * tells of between a tick queued before `make` and one queued after it threw are the ones `make`
 * created. `ends` hears of each one's exit, then that all have stopped. One held in a native
 * call (its init in a blocking read, a driver that hangs) exits only once that call returns: the
 * throw goes on once they have all exited or `timeoutMs` has passed, whichever is first (see
 * exitedWithin); `ends` hears of those left at their exits, after.
 */
export async function endingThreadsOnThrow<T>(
  timeoutMs: number,
  ends: ThreadEnds | undefined,
  make: () => T,
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
    const exits = made.map((worker) => {
      const id = worker.threadId;
      // Its pool is unreachable (its constructor threw) but still listens: at the thread's
      // 'exit' or 'error' it would start another in its place, which nothing would end.
      worker.removeAllListeners('exit');
      worker.removeAllListeners('error');
      worker.on('error', () => {});
      return worker.terminate().then(() => ends?.exited(id));
    });
    stoppedOnceExited(ends, await exitedWithin(exits, timeoutMs), exits);
    throw err;
  }
}
