/**
 * What a user's worker module exports: `export default defineWorker(async (input, ctx) => ...)`.
 * The module runs inside a worker thread, loaded by the runtime's entry.
 */
import { describeValue, InvalidArgumentError } from './errors.js';
import { checkOptionKeys, type OptionKeys } from './option-keys.js';

// Symbol.for, not Symbol(): the user's module may load its own copy of this package.
const kDefinition = Symbol.for('omni-runtime.worker-definition');

/** A task's view of its call, the handler's second argument (one per task). */
export interface TaskContext {
  /** The cost the caller admitted this task with. */
  readonly cost: number;
  /** True once the caller aborted or its deadline passed; the work may stop early. */
  readonly cancelled: boolean;
  /** Aborts when `cancelled` becomes true (created on first use). */
  readonly signal: AbortSignal;
  /** Date.now() after which the caller no longer waits, or 0. */
  readonly deadlineAt: number;
  /**
   * Moves these buffers back to the caller zero-copy with the result (detached here). A buffer
   * Node will not move (a WebAssembly.Memory's, a pooled Buffer's from `Buffer.from`): Node 20
   * leaves it in place, copied where the result refers to it; Node 21+ refuses it: the call
   * rejects OMNI_ERR_TASK_FAILED, and with a buffer or view as the result its thread ends too
   * (docs/limits.md). List a copy of its bytes instead.
   */
  transfer(...buffers: ArrayBuffer[]): void;
}

/**
 * Runs one task on a worker thread: its input is the caller's, structured-cloned (or moved with
 * `transfer`), and its result (or resolution) is posted back the same way. A throw without a
 * `code` reaches the caller as OMNI_ERR_TASK_FAILED; one with a code keeps it.
 */
export type WorkerHandler<I, O> = (input: I, ctx: TaskContext) => O | Promise<O>;

/** defineWorker()'s hooks; an unknown key or a hook that is no function: OMNI_ERR_INVALID_ARGUMENT. */
export interface WorkerOptions {
  /** Runs once per thread before its first task, with the runtime's `workerData`. */
  readonly init?: ((data: unknown) => void | Promise<void>) | undefined;
  /**
   * Runs once per thread whose init succeeded, when the runtime closes (after the last task; when
   * a close timeout cuts the drain short, on the threads not running a call) or when start()
   * fails on another thread (its init threw, ended its thread or never finished): free what init
   * took (native contexts, device memory). Threads are terminated afterwards, and a terminated
   * thread runs no exit handlers, so this is the only place in the thread to do it (threadEnds
   * tells the main thread of a thread that ended without it). Not called on a thread that close()
   * has to terminate (in a call a close timeout abandoned), on a thread that dies (an uncaught
   * error, process.exit), nor on a thread whose own init threw: init frees what it took before
   * throwing.
   */
  readonly close?: (() => void | Promise<void>) | undefined;
}

const WORKER_KEYS: OptionKeys<WorkerOptions> = { init: true, close: true };

/** What a worker module default-exports: made by defineWorker(), recognised by its brand. */
export interface WorkerDefinition<I = unknown, O = unknown> {
  readonly [kDefinition]: true;
  /** The task handler given to defineWorker(). */
  readonly handler: WorkerHandler<I, O>;
  /** WorkerOptions.init, or undefined. */
  readonly init: ((data: unknown) => void | Promise<void>) | undefined;
  /** WorkerOptions.close, or undefined. */
  readonly close: (() => void | Promise<void>) | undefined;
}

/**
 * Makes the definition a worker module default-exports:
 * `export default defineWorker(async (input, ctx) => ...)`. Throws OMNI_ERR_INVALID_ARGUMENT
 * for a handler that is no function or bad options, where the worker is written.
 */
export function defineWorker<I, O>(
  handler: WorkerHandler<I, O>,
  options: WorkerOptions = {},
): WorkerDefinition<I, O> {
  if (typeof handler !== 'function')
    throw new InvalidArgumentError(`defineWorker needs a handler function, got ${describeValue(handler)}`);
  // Checked where the worker is written: a wrong hook would otherwise fail every thread's start.
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError(
      `defineWorker options must be an object { init?, close? }, got ${describeValue(options)}`,
    );
  }
  // A misspelt `close` hook would leave every thread's native resources unfreed without a word.
  checkOptionKeys('defineWorker options', options, WORKER_KEYS);
  const { init, close } = options;
  for (const [name, hook] of [
    ['init', init],
    ['close', close],
  ] as const) {
    if (hook !== undefined && typeof hook !== 'function') {
      throw new InvalidArgumentError(
        `defineWorker option ${name} must be a function, got ${describeValue(hook)}`,
      );
    }
  }
  return { [kDefinition]: true, handler, init, close };
}

export function isWorkerDefinition(value: unknown): value is WorkerDefinition {
  return (
    typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[kDefinition] === true
  );
}
