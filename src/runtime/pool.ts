import { Piscina } from 'piscina';
import { WorkerExitedError } from '../errors.js';
import { builtModuleUrl } from '../paths.js';
import { fromWire } from '../wire-error.js';
import type { CheckedRuntimeOptions } from './options.js';
import { ABANDONED, type EntryData, type PingMessage, type PingReply } from './protocol.js';
import { messageOf } from './task-failure.js';
import { exitedWithin, stoppedOnceExited } from './terminated-exits.js';
import type { ThreadEnds } from './thread-ends.js';
import { watchThreadExits } from './thread-exit-watch.js';
import { endingThreadsOnThrow } from './thread-starts.js';
import { within } from './within.js';

/**
 * Sends one message of `kind` to every thread. Each blocks its thread at a shared barrier until
 * all have arrived, so the messages cannot all land on one thread: every thread answers once.
 */
export function broadcast(
  pool: Piscina,
  kind: PingMessage['kind'],
  threads: number,
  timeoutMs: number,
): Round {
  const barrier = new SharedArrayBuffer(4);
  const message: PingMessage = { kind, barrier, threads, timeoutMs };
  const replies = Array.from({ length: threads }, () => pool.run(message) as Promise<PingReply>);
  return { replies, barrier: new Int32Array(barrier) };
}

interface Round {
  readonly replies: readonly Promise<PingReply>[];
  readonly barrier: Int32Array;
}

/**
 * Gives up a ping round that cannot complete: its threads stop waiting at the barrier, and each
 * whose init succeeded runs its close hook before it answers. `stuck`: some thread never took
 * its ping (its init did not finish), so only the threads already at the barrier are waited
 * for; otherwise every ping still out is. Bounded by `timeoutMs` (a close hook that hangs).
 */
async function abandon(round: Round, stuck: boolean, timeoutMs: number): Promise<void> {
  // One atomic step sets the flag and reads who is waiting at the barrier.
  const waiting = Atomics.or(round.barrier, 0, ABANDONED) & ~ABANDONED;
  Atomics.notify(round.barrier, 0);
  if (!stuck) {
    await within(Promise.allSettled(round.replies), timeoutMs);
    return;
  }
  if (waiting === 0) return;
  let answered = 0;
  const closed = new Promise<void>((resolve) => {
    for (const reply of round.replies) {
      reply.then(
        (r) => {
          if (r.abandoned === true && ++answered === waiting) resolve();
        },
        () => {},
      );
    }
  });
  await within(closed, timeoutMs);
}

/**
 * Starts the piscina pool and resolves once every thread has loaded the worker module, run its
 * init and answered a ping. piscina reports a worker ready before its module has finished
 * loading, so readiness is proved by tasks. `ends` hears of every thread's exit from the first.
 */
export async function startPool(
  options: CheckedRuntimeOptions,
  entryData: EntryData,
  ends?: ThreadEnds,
): Promise<Piscina> {
  let pool: Piscina;
  try {
    // Bounded as destroyPool's wait is: a thread it made may be held in a native call.
    pool = await endingThreadsOnThrow(options.startTimeoutMs, ends, () => {
      const made = createPool(options, entryData);
      // Now, in the turn the threads were made: Node tells of them in ticks that, when start()
      // was called from a macrotask, run before the await above resumes.
      if (ends) exitWatches.set(made, watchThreadExits(made, ends));
      // A worker that fails outside a task (while loading, or between tasks) makes piscina emit
      // 'error'; without a listener that would throw in the main thread. Tasks report their own.
      made.on('error', () => {});
      return made;
    });
  } catch (err) {
    throw new WorkerExitedError(`worker threads could not be started: ${messageOf(err)}`, {
      cause: err,
    });
  }
  let everyThreadAnswered = false;
  let stuck = false;
  const ping = broadcast(pool, 'ping', options.threads, options.startTimeoutMs);
  try {
    // A thread whose module or init never settles never takes its ping: the barrier inside the
    // threads cannot bound that, so the whole start is bounded here.
    const replies = await within(Promise.all(ping.replies), options.startTimeoutMs);
    if (replies === undefined) {
      stuck = true;
      throw new WorkerExitedError(
        `worker threads did not all load and run init within startTimeoutMs (${options.startTimeoutMs} ms)`,
      );
    }
    everyThreadAnswered = new Set(replies.map((r) => r.threadId)).size === options.threads;
    for (const reply of replies) if (!reply.ok) throw fromWire(reply.error);
    if (!everyThreadAnswered) {
      throw new WorkerExitedError('worker threads did not all start within startTimeoutMs');
    }
    // The round is no call, but piscina timed it: report().runTimeMs would show each thread's
    // module load and init (~100-400 ms here) as a call's run time, and its p99 and max for good.
    pool.histogram.resetRunTime();
    pool.histogram.resetWaitTime();
    return pool;
  } catch (err) {
    // The threads whose init succeeded hold what it took (a native context, device memory), and
    // destroy() terminates threads without running their close hooks. When every thread
    // answered they all meet at a teardown barrier; otherwise (one exited, or is stuck in init)
    // the ones waiting at the ping's barrier close where they are.
    if (everyThreadAnswered) await teardown(pool, options.threads, options.startTimeoutMs);
    else await abandon(ping, stuck, options.startTimeoutMs);
    // What a thread stuck in init, or one that exited before anyone saw it, took is given back
    // by `stopped` (not by its exit: it may never have been seen alive): here, or at the exit of
    // one held in a native call, which start() does not wait for past its bound.
    tellStopped(pool, await destroyPool(pool, options.startTimeoutMs, 'all'), ends);
    // Node's own codes pass through (ERR_MODULE_NOT_FOUND: a worker file that is missing), but
    // a thread its resourceLimits killed died as any other: ERR_WORKER_OUT_OF_MEMORY came back
    // uncoded where a thread lost at start is OMNI_ERR_WORKER_EXITED.
    if (err instanceof Error && 'code' in err && err.code !== 'ERR_WORKER_OUT_OF_MEMORY') throw err;
    throw new WorkerExitedError(String((err as Error)?.message ?? err), { cause: err });
  }
}

/**
 * Every thread runs its worker's close hook. Failures are warnings: the pool is going anyway.
 * Resolves to the threadIds that answered, or undefined when the hooks did not all finish within
 * `timeoutMs` (one hangs, say), or before `cut` settled (close()'s own timeout): the caller must
 * then destroy the pool, as a graceful close would wait on that thread forever. A thread that
 * ends in its hook never reaches the barrier: the others are let go of it at once.
 */
export async function teardown(
  pool: Piscina,
  threads: number,
  timeoutMs: number,
  cut?: Promise<void>,
): Promise<Set<number> | undefined> {
  let wasCut = false;
  const round = broadcast(pool, 'teardown', threads, timeoutMs);
  const release = (): void => {
    // Flag, then notify: a thread woken at the barrier reads ABANDONED and stops waiting.
    Atomics.or(round.barrier, 0, ABANDONED);
    Atomics.notify(round.barrier, 0);
  };
  for (const reply of round.replies) reply.catch(release);
  const all = Promise.allSettled(round.replies);
  const cutShort = cut?.then(() => {
    wasCut = true;
    return undefined;
  });
  const settled = await within(cutShort ? Promise.race([all, cutShort]) : all, timeoutMs);
  if (settled === undefined) {
    const why = wasCut ? "before close()'s timeout" : `within ${timeoutMs} ms`;
    process.emitWarning(`worker close hooks did not finish ${why}`, 'OmniRuntimeWarning');
    return undefined;
  }
  const answered = new Set<number>();
  for (const result of settled) {
    if (result.status === 'rejected') {
      const message = (result.reason as Error)?.message ?? String(result.reason);
      process.emitWarning(`worker teardown failed: ${message}`, 'OmniRuntimeWarning');
      continue;
    }
    answered.add(result.value.threadId);
    if (!result.value.ok) {
      process.emitWarning(`worker close hook failed: ${result.value.error.message}`, 'OmniRuntimeWarning');
    }
  }
  return answered;
}

/**
 * piscina's own view of one thread, as its 'workerCreate' event carries it (a live view: it
 * reads the thread's state when read). Declared here: piscina does not export the type.
 */
interface ThreadView {
  /** The thread's threadId (-1 once it has exited). */
  readonly id: number;
  readonly currentUsage: number;
  readonly destroyed: boolean;
  readonly terminating: boolean;
}

/** Each pool's threads that have come up ('workerCreate'), less those found destroyed. */
const upThreads = new WeakMap<Piscina, Set<ThreadView>>();

/** Each pool's way to stop its exit watch hearing of thread starts (see destroyPool). */
const exitWatches = new WeakMap<Piscina, () => void>();

/** Each pool's threads that piscina has removed and that have not exited yet: their exits. */
const endingThreads = new WeakMap<Piscina, Set<Promise<void>>>();

/**
 * threadIds of the threads that are up and run no task now (a ping included). Read from
 * piscina's own task bookkeeping, which is what decides where the next task goes: with no task
 * queued, a round of this many messages goes one to each of them, at once.
 */
export function idleThreads(pool: Piscina): number[] {
  const idle: number[] = [];
  for (const thread of upThreads.get(pool) ?? []) {
    if (!thread.destroyed && !thread.terminating && thread.currentUsage === 0) idle.push(thread.id);
  }
  return idle;
}

/**
 * Threads that are up and run a task now: with one task per thread, the calls running, less any
 * ping. A call piscina has handed to a thread still starting (it offers queued calls to those)
 * is not among them, nor is one its queueSize leaves out (it discounts the room of threads
 * still starting).
 */
export function busyThreads(pool: Piscina): number {
  let busy = 0;
  for (const thread of upThreads.get(pool) ?? []) {
    if (!thread.destroyed && thread.currentUsage > 0) busy++;
  }
  return busy;
}

/**
 * Follows the pool's threads from the first: piscina emits the first threads' 'workerCreate'
 * on the next microtask, so this must be attached in the turn the pool is made. Each event
 * carries a fresh view object, so a destroyed thread is dropped by its flag, not by identity.
 * A removed thread may still be running (one that died of an uncaught error is removed at its
 * 'error', and exits later): its exit is kept for destroyPool(). piscina emits 'workerDestroy'
 * before the thread leaves `pool.threads`; one whose threadId reads -1 is exiting already.
 */
function trackThreads(pool: Piscina): void {
  const up = new Set<ThreadView>();
  const ending = new Set<Promise<void>>();
  upThreads.set(pool, up);
  endingThreads.set(pool, ending);
  pool.on('workerCreate', (thread: ThreadView) => up.add(thread));
  pool.on('workerDestroy', (removed: ThreadView) => {
    for (const thread of up) if (thread.destroyed) up.delete(thread);
    const id = removed.id;
    const worker = id === -1 ? undefined : pool.threads.find((t) => t.threadId === id);
    if (worker === undefined) return;
    // Not events.once(): that would reject on a later 'error', and this promise has no reader
    // until the pool is destroyed.
    const exited = new Promise<void>((resolve) => {
      worker.once('exit', () => {
        ending.delete(exited);
        resolve();
      });
    });
    ending.add(exited);
  });
}

/**
 * Stops the pool's threads for good, and resolves once every thread it ever had has exited.
 * piscina's destroy() waits only for the threads still in the pool; one removed earlier (dead
 * of an uncaught error: removed at its 'error', exiting later) may exit after destroy() has
 * ended, and piscina's exit handler then tops the pool back up to minThreads: a new thread
 * that would run the worker's init and idle for good. With minThreads 0 no exit starts one.
 * Such a thread has been terminated by piscina and runs no more of the worker's code; only
 * native code (its own sub-threads, a native cleanup hook) can hold its exit, so the wait for
 * it is bounded by `timeoutMs`: past that nothing more can start, and close() resolves with
 * a warning rather than hang. `bounded` says whose exits that bound covers: 'removed', those
 * only (close(): a thread still in the pool may be in a call's native call, which close() waits
 * for, see docs/limits.md), or 'all' (a failed start(): one held in its init's native call
 * must not hold start() past its bound). Resolves true when every thread has exited, false past
 * that bound or when destroy() itself failed (a warning); it does not reject.
 */
export async function destroyPool(
  pool: Piscina,
  timeoutMs: number,
  bounded: 'removed' | 'all',
): Promise<boolean> {
  // The pool's live options object: piscina reads minThreads from it at every exit.
  (pool.options as { minThreads: number }).minThreads = 0;
  // Its threads are terminated and noted in endingThreads (its 'workerDestroy') in this call,
  // and piscina sets its destroying flag before its first await: the pool starts no thread from
  // here, so its exit watch stops listening and a closed runtime leaves nothing on `process`
  // (see thread-starts.ts), even while a thread's exit is awaited past the bound.
  const destroyed = pool.destroy().then(
    () => true,
    // It runs the pool's 'workerDestroy' listeners and settles the calls it cuts off: a throw
    // there must not become what close() or a failed start() settles with. The threads it
    // noted are still waited for, and `stopped` told only at their exits (see tellStopped).
    (err: unknown) => {
      process.emitWarning(`destroying the worker pool failed: ${messageOf(err)}`, 'OmniRuntimeWarning');
      return false;
    },
  );
  exitWatches.get(pool)?.();
  const ending = endingThreads.get(pool) ?? new Set<Promise<void>>();
  if (bounded === 'all') return (await exitedWithin([destroyed, ...ending], timeoutMs)) && destroyed;
  const whole = await destroyed;
  return (ending.size === 0 || (await exitedWithin(ending, timeoutMs))) && whole;
}

/**
 * Tells `ends` that every thread the pool had has exited, once `destroyPool` has resolved
 * `allExited`: at once when it saw them all exit, else once the threads it gave up waiting for
 * have (after close() or start() has settled; never, for one that never exits). Not before: one
 * still in a native call may be using what it holds.
 */
export function tellStopped(pool: Piscina, allExited: boolean, ends: ThreadEnds | undefined): void {
  // Only threads that have not exited are left in the set; the pool, destroyed, adds none.
  stoppedOnceExited(ends, allExited, endingThreads.get(pool) ?? []);
}

/** The pool. Its workerData posts: the caller's was cloned once already (checkRuntimeOptions). */
function createPool(options: CheckedRuntimeOptions, entryData: EntryData): Piscina {
  const pool = new Piscina({
    // A CommonJS shim: piscina's require() of entry.js itself could abort the process.
    filename: builtModuleUrl('workers/entry-shim.cjs'),
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
  trackThreads(pool);
  return pool;
}
