import { Piscina } from 'piscina';
import { fromWire, WorkerExitedError } from '../errors.js';
import { builtModuleUrl } from '../paths.js';
import type { CheckedRuntimeOptions } from './options.js';
import type { EntryData, PingMessage, PingReply } from './protocol.js';

/**
 * Sends one message of `kind` to every thread. Each blocks its thread at a shared barrier until
 * all have arrived, so the messages cannot all land on one thread: every thread answers once.
 */
export function broadcast(
  pool: Piscina,
  kind: PingMessage['kind'],
  threads: number,
  timeoutMs: number,
): Promise<PingReply[]> {
  const message: PingMessage = { kind, barrier: new SharedArrayBuffer(4), threads, timeoutMs };
  return Promise.all(Array.from({ length: threads }, () => pool.run(message) as Promise<PingReply>));
}

/**
 * Starts the piscina pool and resolves once every thread has loaded the worker module, run its
 * init and answered a ping. piscina reports a worker ready before its module has finished
 * loading, so readiness is proved by tasks.
 */
export async function startPool(options: CheckedRuntimeOptions, entryData: EntryData): Promise<Piscina> {
  const pool = new Piscina({
    filename: builtModuleUrl('workers/entry.js'),
    minThreads: options.threads,
    maxThreads: options.threads,
    concurrentTasksPerWorker: 1,
    maxQueue: Number.POSITIVE_INFINITY,
    // Queued tasks start in submission order (piscina otherwise re-queues at the back).
    stricterFIFO: true,
    idleTimeout: options.idleTimeout ?? Number.POSITIVE_INFINITY,
    ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
    workerData: entryData,
    recordTiming: true,
  });
  // A worker that fails outside a task (while loading, or between tasks) makes piscina emit
  // 'error'; without a listener that would throw in the main thread. Tasks report their own.
  pool.on('error', () => {});
  try {
    const replies = await broadcast(pool, 'ping', options.threads, options.startTimeoutMs);
    for (const reply of replies) if (!reply.ok) throw fromWire(reply.error);
    if (new Set(replies.map((r) => (r.ok ? r.threadId : -1))).size !== options.threads) {
      throw new WorkerExitedError('worker threads did not all start within startTimeoutMs');
    }
    return pool;
  } catch (err) {
    await pool.destroy();
    throw err instanceof Error && 'code' in err
      ? err
      : new WorkerExitedError(String((err as Error)?.message ?? err));
  }
}
