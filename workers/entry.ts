/**
 * The piscina worker entry every runtime thread runs. It attaches to the runtime's admission,
 * loads the user's worker module once, and wraps each task so that the task's claim is
 * released here, in this thread, in `finally`, before the result is posted back.
 */
import { threadId, workerData } from 'node:worker_threads';

import { BoundedAdmission } from '../src/admission/index.js';
import { isWorkerDefinition, type WorkerDefinition } from '../src/define-worker.js';
import { messageClaim, type TaskMessage } from '../src/envelope.js';
import { InvalidArgumentError } from '../src/errors.js';
import { isCancelled } from '../src/runtime/cancel-words.js';
import {
  ABANDONED,
  type EntryData,
  type PingMessage,
  type PingReply,
  type TaskReply,
} from '../src/runtime/protocol.js';
import { toWire, type WireError } from '../src/wire-error.js';
import { resultReply } from './result-reply.js';
import { transferListOf, WorkerTaskContext } from './task-context.js';
import { reportUncaughtErrors } from './uncaught.js';

reportUncaughtErrors();
const data = workerData as EntryData;
const admission = BoundedAdmission.attach(data.admission);
const cancelWords = new Int32Array(data.cancel);

let definition: WorkerDefinition | undefined;
let initError: WireError | undefined;
try {
  const mod = (await import(data.module)) as { default?: unknown };
  // import() of a CommonJS module gives its whole module.exports as `default`: the definition
  // is there (`module.exports = defineWorker(...)`) or, for `export default defineWorker(...)`
  // compiled to CommonJS (tsc, esbuild, Babel), its `default` property.
  const found = isWorkerDefinition(mod.default)
    ? mod.default
    : (mod.default as { default?: unknown })?.default;
  if (!isWorkerDefinition(found)) {
    throw new InvalidArgumentError(`${data.module} must export default defineWorker(...)`);
  }
  definition = found;
  await definition.init?.(data.data);
} catch (err) {
  // Reported through the start-up ping, so start() rejects with the worker's own error code.
  initError = toWire(err);
}
// Before piscina's ready message: a close that ends its teardown rounds in between waits for it.
const loaded = new Int32Array(data.loaded);
Atomics.add(loaded, 0, 1);
Atomics.notify(loaded, 0);

function ping(message: PingMessage): PingReply | Promise<PingReply> {
  if (!arriveAndWait(message)) {
    // The start was abandoned (another thread exited, or never finished its init): nobody
    // will send this thread a teardown, so free what its init took now.
    return closeHook().then((error) =>
      error ? { ok: false, threadId, error, abandoned: true } : { ok: true, threadId, abandoned: true },
    );
  }
  return initError ? { ok: false, threadId, error: initError } : { ok: true, threadId };
}

/**
 * A clean close, or a start that failed on another thread: free what init took, then meet the
 * other threads at the barrier.
 */
async function teardown(message: PingMessage): Promise<PingReply> {
  const error = await closeHook();
  arriveAndWait(message);
  return error ? { ok: false, threadId, error } : { ok: true, threadId };
}

let closed = false;

/**
 * The worker's close hook, once its init succeeded, and at most once (a teardown may come
 * round again). A thread whose own init threw never runs close (init must free what it took
 * before throwing): close may rely on everything init sets up.
 */
async function closeHook(): Promise<WireError | undefined> {
  if (closed) return undefined;
  closed = true;
  try {
    if (initError === undefined) await definition?.close?.();
    return undefined;
  } catch (err) {
    return toWire(err);
  }
}

/** False when the start was abandoned while this thread waited. */
function arriveAndWait(message: PingMessage): boolean {
  const barrier = new Int32Array(message.barrier);
  // Count, then notify: a thread woken at the barrier reads a count that includes this one.
  Atomics.add(barrier, 0, 1);
  Atomics.notify(barrier, 0);
  // Block this thread until every thread has its ping: the pings then ran on distinct threads.
  const until = Date.now() + message.timeoutMs;
  for (;;) {
    const seen = Atomics.load(barrier, 0);
    if ((seen & ABANDONED) !== 0) return false;
    const left = until - Date.now();
    if (seen >= message.threads || left <= 0) return true;
    Atomics.wait(barrier, 0, seen, left);
  }
}

async function runTask(message: TaskMessage): Promise<TaskReply> {
  const input = message[0];
  const deadlineAt = message[5];
  const claim = messageClaim(message);
  const ctx = new WorkerTaskContext(cancelWords, claim, claim.units, deadlineAt);
  try {
    // A task whose caller left before it started never runs; its capacity returns right here.
    if (isCancelled(cancelWords, claim)) return { ok: false, skipped: 'aborted' };
    if (deadlineAt !== 0 && Date.now() >= deadlineAt) return { ok: false, skipped: 'deadline' };
    // A thread whose init threw (a replacement thread, after start) never runs the handler,
    // which may rely on everything init sets up. It answers with that error, fatal: a thread
    // that cannot serve fails the runtime, as the same error fails start().
    if (initError !== undefined) return { ok: false, error: { ...initError, fatal: true } };
    if (!definition) return { ok: false, error: toWire(new Error('worker not initialised')) };
    return resultReply(await definition.handler(input, ctx), transferListOf(ctx));
  } catch (err) {
    const stopped = ctx.stoppedBy(err);
    return stopped === undefined ? { ok: false, error: toWire(err) } : { ok: false, skipped: stopped };
  } finally {
    ctx.finish();
    // The work has ended: give the capacity back from here. reclaim() is the non-throwing
    // release; the main thread's later reclaim of the same claim then finds nothing to do.
    admission.reclaim(claim);
  }
}

export default function entry(
  message: TaskMessage | PingMessage,
): PingReply | Promise<TaskReply | PingReply> {
  if (Array.isArray(message)) return runTask(message as TaskMessage);
  const control = message as PingMessage;
  return control.kind === 'ping' ? ping(control) : teardown(control);
}
