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
   * the id the thread read from node:worker_threads. Called once per thread the runtime's pool
   * started, after its close hook if it ran one, whether or not the thread ever came up (one may
   * end in its init: see thread-exit-watch.ts).
   */
  exited(threadId: number): void;
  /**
   * Every thread the pool ever had has exited: called once, after every `exited`, by close() (a
   * failed runtime's too) or a failed start(), before it settles. When close() or start() gave up
   * waiting for a thread (an OmniRuntimeWarning), it is called at that thread's exit, after close()
   * resolved or start() rejected; never, if that thread never exits.
   */
  stopped(): void;
}

/**
 * `threadEnds` checked, its two functions read once (as every option is), and wrapped: a throw
 * in either is an OmniRuntimeWarning whose `cause` is what was thrown, never an exception in the
 * worker's 'exit' event (it would skip the listeners after it, piscina's destroy() among them,
 * and close() would never resolve) nor a rejection of close() or start() (the threads are gone
 * all the same, and the next `exited` or `stopped` is still called). An async function's promise
 * is not awaited, but its rejection is such a warning too, not an unhandled rejection (which
 * ends the process by default).
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

function guarded(name: string, call: () => unknown): void {
  try {
    const result = call();
    if ((typeof result === 'object' && result !== null) || typeof result === 'function') {
      const then = (result as { then?: unknown }).then;
      if (typeof then === 'function') {
        Reflect.apply(then, result, [undefined, (err: unknown) => warn(name, err)]);
      }
    }
  } catch (err) {
    warn(name, err);
  }
}

function warn(name: string, err: unknown): void {
  let message: string;
  try {
    message = err instanceof Error ? String(err.message) : describeValue(err);
  } catch {
    message = 'an error that cannot be described';
  }
  const warning = new Error(`threadEnds.${name} failed: ${message}`, { cause: err });
  warning.name = 'OmniRuntimeWarning';
  process.emitWarning(warning);
}
