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
