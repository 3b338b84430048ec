import type { Worker } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import { describeValue, InvalidArgumentError } from '../errors.js';

/**
 * What a runtime tells its owner about its threads' ends (Runtime.start's `threadEnds`), for what
 * a thread holds that the main thread can give back once the thread is gone: a native handle,
 * device memory, a temp file, a shared-memory slot, recorded by the thread (keyed by its
 * `threadId` from node:worker_threads) where the main thread can read it. Both are called on the
 * main thread, for every thread however it ended: its close hook ran, it was terminated by a
 * close timeout, or it died mid-life (`process.exit`, an uncaught error, `terminate()`).
 */
export interface ThreadEnds {
  /**
   * A thread has exited (its worker's 'exit'): none of its code runs any more, native calls
   * included (a terminated thread stops only once its native call has returned). `threadId` is
   * the id the thread read from node:worker_threads. Called once per thread the runtime saw
   * alive, after its close hook if it ran one; not for one that exited before the runtime saw it
   * alive (which only a thread that ends in its init can do: see watchThreadExits), whose
   * resources `stopped` covers.
   */
  exited(threadId: number): void;
  /**
   * Every thread the pool ever had has exited: before close() resolves, or start() rejects; after
   * every `exited`. Called once. A thread that close() gave up waiting for (an
   * OmniRuntimeWarning) calls it at its own exit, after close() resolved; never, if it never exits.
   */
  stopped(): void;
}

/**
 * `threadEnds` checked, its two functions read once (as every option is), and wrapped: a throw
 * in either is an OmniRuntimeWarning whose `cause` is what was thrown, never an exception in the
 * worker's 'exit' event (it would skip the listeners after it, piscina's destroy() among them,
 * and close() would never resolve) nor a rejection of close() or start() (the threads are gone
 * all the same, and the next `exited` or `stopped` is still called).
 */
export function checkThreadEnds(value: unknown): ThreadEnds | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null) {
    throw new InvalidArgumentError(
      `threadEnds must be an object { exited, stopped }, got ${describeValue(value)}`,
    );
  }
  // Read, not key-checked: a class instance with fields of its own is a fine ThreadEnds.
  const { exited, stopped } = value as Partial<ThreadEnds>;
  for (const [name, fn] of [
    ['exited', exited],
    ['stopped', stopped],
  ] as const) {
    if (typeof fn !== 'function') {
      throw new InvalidArgumentError(`threadEnds.${name} must be a function, got ${describeValue(fn)}`);
    }
  }
  return {
    exited: (threadId) => guarded('exited', () => Reflect.apply(exited!, value, [threadId])),
    stopped: () => guarded('stopped', () => Reflect.apply(stopped!, value, [])),
  };
}

function guarded(name: string, call: () => void): void {
  try {
    call();
  } catch (err) {
    let message: string;
    try {
      message = err instanceof Error ? String(err.message) : describeValue(err);
    } catch {
      message = 'an error that cannot be described';
    }
    const warning = new Error(`threadEnds.${name} threw: ${message}`, { cause: err });
    warning.name = 'OmniRuntimeWarning';
    process.emitWarning(warning);
  }
}

/**
 * Tells `ends` of each thread's exit. A Worker's threadId reads -1 once it has exited, so each is
 * noted while it is alive: at every thread that comes up or is removed, and just after a removal
 * (when piscina has made its replacement), every thread in the pool not yet watched is. A thread
 * created and exited between two of those events is missed: only `stopped` covers it.
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
