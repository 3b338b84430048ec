import type { Piscina } from 'piscina';
import { BoundedAdmission, type Claim, type Permit } from './admission/index.js';
import { kRecount } from './admission/internal.js';
import { MAX_CLAIM_SLOTS } from './admission/layout.js';
import { moveEnvelope, TaskEnvelope } from './envelope.js';
import {
  AbortError,
  ClosedError,
  DeadlineError,
  hasCode,
  type RefusalReason,
  RejectedError,
  TimeoutError,
  TooLargeError,
  UnavailableError,
  WorkerExitedError,
} from './errors.js';
import { clearLongTimeout, type LongTimer, setLongTimeout } from './long-timeout.js';
import { isMovable, movedValue, withMovedBuffers } from './movable.js';
import { CancelWords } from './runtime/cancel-words.js';
import {
  type CheckedRunOptions,
  type CheckedRuntimeOptions,
  type CloseOptions,
  checkCloseOptions,
  checkRunOptions,
  checkRuntimeOptions,
  defaultRunOptions,
  type RunOptions,
  type RuntimeOptions,
} from './runtime/options.js';
import { noOutcomes, type Outcomes, PendingTask, type TaskOwner } from './runtime/pending-task.js';
import { busyThreads, idleThreads, startPool, teardown } from './runtime/pool.js';
import type { TaskReply } from './runtime/protocol.js';
import { ReplacementWatch } from './runtime/replacement-watch.js';
import { type RuntimeReport, type RuntimeState, runtimeReport } from './runtime/report.js';

export type { CloseOptions } from './runtime/options.js';
export type { LatencySummary, RuntimeReport, RuntimeState } from './runtime/report.js';

/** How close() ended: told by the runtime, since its teardown takes time of its own. */
export interface CloseResult {
  /** True when every call ended on its own; false when a close timeout abandoned work. */
  readonly clean: boolean;
  /** Calls still outstanding (running or queued) when the timeout cut the wait short. */
  readonly abandoned: number;
}

/**
 * The serial scheduler still gives every call a claim (so exactly-once release and cooperative
 * cancellation work the same way); its admission never refuses, it only makes calls beyond
 * this many outstanding wait, in order, for a claim slot.
 */
const SERIAL_WINDOW = MAX_CLAIM_SLOTS;

/** @internal Not exported from the package: LinearRuntime's way to count its own early ends. */
export const kEndedEarly = Symbol('omni.runtime.endedEarly');

/**
 * A piscina pool whose calls carry an admission permit into the worker that does the work.
 *
 * Invariants: capacity taken by run() is given back exactly once, when the work has ended
 * (the worker releases its claim in `finally`; if the worker died, the settling call reclaims
 * it). A caller's abort or deadline settles the caller, never the capacity. Without
 * `admission` nothing is ever refused (report().rejected stays 0) and calls start in order.
 * Memory ordering: a claim reaches its worker inside the task message and its result comes
 * back in the reply; postMessage orders both, so no shared word carries data here beyond the
 * admission's (see BoundedAdmission) and the cancel words (see CancelWords).
 * Abort safety: the caller's signal is never passed to piscina (its abort would terminate a
 * thread that may be inside a native call); an abort or deadline only settles the caller and
 * sets the task's cancel word.
 * Throws: start() rejects with OMNI_ERR_INVALID_ARGUMENT / OMNI_ERR_INVALID_BOUND (options),
 * a thread's init error (its own code, else OMNI_ERR_TASK_FAILED), OMNI_ERR_WORKER_EXITED (a
 * thread that exits or does not come up within startTimeoutMs) or Node's own error for a
 * worker module that will not load; run() rejects with
 * OMNI_ERR_UNAVAILABLE, OMNI_ERR_REJECTED, OMNI_ERR_TOO_LARGE, OMNI_ERR_INVALID_COST,
 * OMNI_ERR_INVALID_ARGUMENT (malformed options, checked before admission; or an input that
 * structured clone cannot post to a worker), AbortError, OMNI_ERR_DEADLINE,
 * OMNI_ERR_WORKER_EXITED, OMNI_ERR_TASK_FAILED (also for a result that cannot be posted
 * back) or the worker's own coded error.
 */
export class Runtime {
  #state: RuntimeState = 'starting';
  readonly #options: CheckedRuntimeOptions;
  readonly #admission: BoundedAdmission;
  readonly #bounded: boolean;
  readonly #waits: boolean;
  readonly #cancel: CancelWords;
  /** Every call made ends in exactly one of these: they add up to the calls made. */
  readonly #outcomes: Outcomes = noOutcomes();
  readonly #owner: TaskOwner;
  /** run() without options: checked once, not per call. */
  readonly #defaultCall: CheckedRunOptions;
  #pool: Piscina | undefined;
  #inflight = 0;
  /** Calls whose work has not ended, for a close timeout to abandon (see TaskOwner.live). */
  readonly #live = new Set<PendingTask>();
  #closing: Promise<CloseResult> | undefined;
  /**
   * Ends close()'s wait early, for in-flight work or close hooks (armed by a close timeout);
   * unset once close() is over.
   */
  #force: (() => void) | undefined;
  #forceTimer: LongTimer;
  #forceAt = Number.POSITIVE_INFINITY;
  /** close() is stopping the threads itself: their exits are no longer a lost pool. */
  #tearingDown = false;
  #failure: Error | undefined;
  /** The pool was destroyed after losing every thread: close() must not send it more work. */
  #abandoned = false;
  /** The abandoned pool's destroy(): close() resolves only once its threads are gone. */
  #destroyed: Promise<void> | undefined;
  /** Fails the runtime when a lost thread's replacement does not come up. */
  #watch: ReplacementWatch | undefined;

  private constructor(options: CheckedRuntimeOptions) {
    this.#options = options;
    // checkRuntimeOptions has checked the bound, its claim-slot limit included.
    const bounds = options.admission;
    this.#bounded = bounds !== undefined;
    this.#waits = !bounds || bounds.wait === true;
    this.#admission = new BoundedAdmission(bounds ?? { requests: SERIAL_WINDOW });
    this.#cancel = new CancelWords(Math.min(this.#admission.report().capacity, SERIAL_WINDOW));
    this.#defaultCall = defaultRunOptions(options.deadlineMs);
    // Built once: PendingTask reaches the runtime through this, not through per-call closures.
    this.#owner = {
      admission: this.#admission,
      cancel: this.#cancel,
      outcomes: this.#outcomes,
      fail: (error) => this.#fail(error),
      ended: () => {
        this.#inflight--;
      },
      live: this.#live,
    };
  }

  /** Starts the threads and resolves once every one has loaded its worker and answered. */
  static async start(options: RuntimeOptions): Promise<Runtime> {
    const runtime = new Runtime(checkRuntimeOptions(options));
    const loaded = new SharedArrayBuffer(4);
    runtime.#pool = await startPool(runtime.#options, {
      admission: runtime.#admission.buffer,
      cancel: runtime.#cancel.words.buffer as SharedArrayBuffer,
      loaded,
      module: runtime.#options.moduleUrl,
      data: runtime.#options.workerData,
    });
    const pool = runtime.#pool;
    const loads = new Int32Array(loaded);
    const watch = new ReplacementWatch(pool, loads, runtime.#options.startTimeoutMs, (error) => {
      runtime.#fail(error);
      // No thread left that could take the queued calls: give them back now (this may come
      // with a later loss, after the runtime has failed with a thread still serving).
      if (watch.serving <= 0) runtime.#abandon();
    });
    runtime.#watch = watch;
    // piscina removes a dead worker and starts its replacement in the same turn; look after it
    // once the worker has left pool.threads (it emits just before).
    pool.on('workerDestroy', () => {
      queueMicrotask(() => {
        if (!runtime.#tearingDown && !runtime.#abandoned) watch.removed();
        runtime.#checkThreads();
      });
    });
    runtime.#state = 'ready';
    return runtime;
  }

  get state(): RuntimeState {
    return this.#state;
  }

  /** run()'s default deadline in milliseconds; undefined when there is none. */
  get deadlineMs(): number | undefined {
    return this.#options.deadlineMs;
  }

  /** The sticky error that moved the runtime to 'failed', if any. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  run<O = unknown>(input: unknown, options?: RunOptions): Promise<O> {
    if (this.#state !== 'ready') return this[kEndedEarly]('unavailable', new UnavailableError(this.#state));
    let call: CheckedRunOptions;
    try {
      call = options === undefined ? this.#defaultCall : checkRunOptions(options, this.#options.deadlineMs);
    } catch (err) {
      return this[kEndedEarly]('invalid', err);
    }
    const { cost, signal, deadlineMs } = call;
    if (signal?.aborted) return Promise.reject(this.#abortedBeforeDispatch(signal));
    const deadlineAt = deadlineMs === undefined ? 0 : Date.now() + deadlineMs;
    if (this.#waits) return this.#admitThenDispatch(input, call, deadlineAt) as Promise<O>;
    let admitted: ReturnType<BoundedAdmission['tryAdmit']>;
    try {
      admitted = this.#admission.tryAdmit(cost);
    } catch (err) {
      return this[kEndedEarly]('invalid', err); // OMNI_ERR_INVALID_COST
    }
    if (!admitted.ok) return Promise.reject(this.#refused(admitted.reason, cost));
    return this.#dispatch(admitted, input, call, deadlineAt, deadlineMs) as Promise<O>;
  }

  async #admitThenDispatch(input: unknown, call: CheckedRunOptions, deadlineAt: number): Promise<unknown> {
    const { cost, signal } = call;
    let permit: Permit;
    try {
      // The serial scheduler waits only for a claim slot (past 65,536 outstanding calls): its
      // deadline applies once dispatched, so a slow queue never counts as a refusal there.
      const timed = this.#bounded && deadlineAt !== 0;
      permit = await this.#admission.admit(cost, {
        signal,
        timeoutMs: timed ? Math.max(0, deadlineAt - Date.now()) : undefined,
      });
    } catch (err) {
      throw this.#waitFailed(err, cost);
    }
    // The admission stops watching the signal once it grants the permit, and the task starts
    // watching it only at dispatch: an abort in between (even in the same tick as run()) is
    // caught here, before anything reaches a worker.
    if (signal?.aborted) {
      permit.release();
      throw this.#abortedBeforeDispatch(signal);
    }
    // A permit granted before close() still runs (close drains it); 'failed' or 'stopped' do
    // not, nor does anything once the pool has been abandoned.
    if (this.#abandoned || (this.#state !== 'ready' && this.#state !== 'draining')) {
      permit.release();
      this.#outcomes.unavailable++;
      throw new UnavailableError(this.#state);
    }
    const left = deadlineAt === 0 ? undefined : Math.max(1, deadlineAt - Date.now());
    return this.#dispatch(permit, input, call, deadlineAt, left);
  }

  #abortedBeforeDispatch(signal: AbortSignal): AbortError {
    this.#outcomes.aborted++;
    return new AbortError('the caller aborted before the call', { cause: signal.reason });
  }

  #dispatch(
    permit: Permit,
    input: unknown,
    call: CheckedRunOptions,
    deadlineAt: number,
    deadlineMs: number | undefined,
  ): Promise<unknown> {
    let claim: Claim;
    try {
      claim = permit.toClaim();
    } catch (err) {
      permit.release(); // toClaim leaves the permit held when it throws
      this.#outcomes.failed++;
      return Promise.reject(err);
    }
    this.#inflight++;
    this.#cancel.dispatched(claim);
    return new Promise((resolve, reject) => {
      let task: PendingTask | undefined;
      try {
        task = new PendingTask(this.#owner, claim, resolve, reject, call.signal, deadlineMs);
        // piscina's move() around an input would be lost inside the envelope: unwrap it.
        const envelope = isMovable(input)
          ? new TaskEnvelope(
              claim,
              movedValue(input),
              call.cost,
              deadlineAt,
              withMovedBuffers(input, call.transfer),
            )
          : new TaskEnvelope(claim, input, call.cost, deadlineAt, call.transfer);
        // The caller's signal is never given to piscina: its abort would terminate the thread
        // (mid native call) and free the slot before the work stops.
        task.follow(this.#pool!.run(moveEnvelope(envelope)) as Promise<TaskReply>);
      } catch (err) {
        // Nothing reached a worker. The task's failure path gives the claim back and ends the
        // call; before there is a task, that is done here.
        if (task) {
          task.follow(Promise.reject(err));
        } else {
          this.#admission.reclaim(claim);
          this.#inflight--;
          this.#outcomes.failed++;
          reject(err);
        }
      }
    });
  }

  /**
   * @internal A call that ends before anything is admitted (here, or in LinearRuntime's own
   * checks): rejected, and counted, so the outcomes still add up to the calls made.
   */
  [kEndedEarly](outcome: 'invalid' | 'unavailable' | 'refused', err: unknown): Promise<never> {
    this.#outcomes[outcome]++;
    return Promise.reject(err);
  }

  #refused(reason: RefusalReason, cost: number): Error {
    this.#outcomes.refused++;
    if (reason === 'too-large') return new TooLargeError(cost, this.#admission.report().unitCapacity ?? 0);
    if (reason === 'closed') return new UnavailableError(this.#state);
    const report = this.#admission.report();
    return new RejectedError(reason, report);
  }

  #waitFailed(err: unknown, cost: number): unknown {
    if (err instanceof TimeoutError) {
      this.#outcomes.deadline++;
      return new DeadlineError('deadline passed while waiting for admission');
    }
    if (err instanceof ClosedError) {
      this.#outcomes.unavailable++;
      return new UnavailableError(this.#state);
    }
    if (err instanceof TooLargeError) return this.#refused('too-large', cost);
    if (hasCode(err, 'OMNI_ERR_ABORTED')) this.#outcomes.aborted++;
    else if (hasCode(err, 'OMNI_ERR_INVALID_COST')) this.#outcomes.invalid++;
    return err;
  }

  /**
   * piscina replaces a dead worker, but stops for good once a replacement fails while starting.
   * A pool left with no threads would queue calls forever: fail the runtime and abandon the
   * pool, so queued calls reject and their capacity is reclaimed.
   */
  #checkThreads(): void {
    const pool = this.#pool;
    // During close()'s drain a lost pool must still be abandoned: its queued calls would
    // otherwise never end and the drain never finish. Only teardown's own exits are expected.
    if (!pool || this.#tearingDown || this.#abandoned || pool.threads.length > 0) return;
    this.#fail(new WorkerExitedError('every worker thread has exited and none could be restarted'));
    this.#abandon();
  }

  /** Destroys a pool that cannot serve: its queued calls reject and their capacity is reclaimed. */
  #abandon(): void {
    if (this.#abandoned || this.#tearingDown) return;
    this.#abandoned = true;
    this.#watch?.stop();
    this.#destroyed = this.#pool?.destroy();
  }

  /**
   * Only a ready runtime turns 'failed'. One draining stays so: close() has refused everything
   * not yet admitted by then, so there is nothing left for 'failed' to refuse, and it ends
   * 'stopped' with `failure` kept.
   */
  #fail(error: Error): void {
    this.#failure ??= error;
    if (this.#state === 'ready') this.#state = 'failed';
  }

  report(): RuntimeReport {
    const pool = this.#pool;
    return runtimeReport(
      this.#state,
      this.#admission.report(),
      this.#bounded,
      pool,
      this.#inflight,
      pool ? busyThreads(pool) : 0,
      this.#outcomes,
    );
  }

  /**
   * Stops admitting (run() rejects OMNI_ERR_UNAVAILABLE), lets in-flight and queued work
   * finish, then stops the threads. With `timeoutMs`, work still running then is abandoned:
   * its callers reject, its capacity is reclaimed, and its threads are terminated without their
   * close hooks (the other threads run theirs first, see #forced). Termination cannot interrupt a
   * native call: close() resolves once the threads have stopped, so a thread inside one holds
   * it until the call returns (test/runtime-close-native-call.test.ts). Every call returns the
   * same promise; a later call's timeout still applies when it ends the wait sooner (e.g. a
   * server's drain timeout after a plain close()). Resolves with whether anything was
   * abandoned (OMNI_ERR_INVALID_ARGUMENT for malformed options).
   */
  close(options?: CloseOptions): Promise<CloseResult> {
    let timeoutMs: number | undefined;
    try {
      timeoutMs = checkCloseOptions(options);
    } catch (err) {
      return Promise.reject(err);
    }
    this.#closing ??= this.#shutdown();
    if (timeoutMs !== undefined) this.#forceAfter(timeoutMs);
    return this.#closing;
  }

  /** Arms close()'s timeout, or brings it forward; a later one never postpones it. */
  #forceAfter(timeoutMs: number): void {
    const at = Date.now() + timeoutMs;
    if (this.#force === undefined || at >= this.#forceAt) return;
    this.#forceAt = at;
    clearLongTimeout(this.#forceTimer);
    this.#forceTimer = setLongTimeout((force) => force(), timeoutMs, this.#force);
  }

  /**
   * One teardown turn per thread `reach` names (every thread that serves, for a clean close): a
   * lost thread's replacement that never came up would never take its turn, and close() would
   * wait out startTimeoutMs for it. One that comes up during a round got no turn, nor did one
   * that another thread's turn went to (a thread that ends in its hook lets the others leave the
   * barrier early): another round reaches every thread `reach` names then (the entry runs a
   * thread's close hook once; a second turn answers at once). A replacement's ready message may
   * trail the round's replies, so each round first waits until the watch has heard of every
   * thread that has loaded. One still loading when the last round ends gets no turn: the pool's
   * destroy() terminates it without its close hook. Ends early when a hook does not return in
   * time or `cut` settles.
   */
  async #teardown(pool: Piscina, cut: Promise<void>, reach: () => number[]): Promise<void> {
    const watch = this.#watch;
    const closed = new Set<number>();
    for (let threads = reach(); ; threads = reach()) {
      if (threads.length > 0) {
        const answered = await teardown(pool, threads.length, this.#options.startTimeoutMs, cut);
        if (answered === undefined) return;
        for (const id of answered) closed.add(id);
      }
      if (watch === undefined) return;
      await watch.caughtUp(cut);
      if (reach().every((id) => closed.has(id))) return;
    }
  }

  /**
   * close()'s timeout passed with calls outstanding: they are abandoned now (callers reject,
   * capacity comes back, a call still queued never runs). A thread running one is terminated
   * without its close hook, since a native call cannot be interrupted; every other thread runs
   * its hook first, in the rounds a clean close runs, bounded as those are: by startTimeoutMs,
   * or cut short by a later close timeout (the spent one no longer applies). A round reaches
   * the threads idle then, the ones piscina sees up and without a task (with one of them there
   * is no call queued, so the round's messages go one to each at once). A lost thread's
   * replacement that comes up during a round, or a thread whose abandoned call ends (piscina
   * has heard it end) before the last round is over, is idle for the next round. One still
   * running a call then is terminated without its hook.
   */
  async #forced(pool: Piscina): Promise<void> {
    for (const task of [...this.#live]) task.abandon();
    const cut = new Promise<void>((resolve) => {
      this.#force = resolve;
    });
    this.#forceAt = Number.POSITIVE_INFINITY;
    await this.#teardown(pool, cut, () => idleThreads(pool));
    await pool.destroy();
  }

  async #shutdown(): Promise<CloseResult> {
    this.#state = 'draining';
    const drained = this.#admission.close().then(() => true);
    const expired = new Promise<boolean>((resolve) => {
      this.#force = () => resolve(false);
    });
    const clean = await Promise.race([drained, expired]);
    const abandoned = clean ? 0 : this.#admission.report().depth;
    this.#tearingDown = true;
    this.#watch?.stop();
    const pool = this.#pool!;
    // An abandoned pool is destroyed already: its queued calls were rejected and reclaimed.
    if (!this.#abandoned && clean) {
      // Every thread runs its worker's close hook: terminated threads run no exit handlers. A
      // hook that never returns is not waited for past startTimeoutMs. A close timeout given so
      // far bounded the wait for work, not the hooks (a 0 ms one on an idle runtime must not
      // skip them); one given while they run (a server's second signal: stop waiting) cuts them
      // short instead of leaving close() to wait out startTimeoutMs.
      clearLongTimeout(this.#forceTimer);
      this.#forceAt = Number.POSITIVE_INFINITY;
      const cut = expired.then(() => undefined);
      const watch = this.#watch;
      await this.#teardown(pool, cut, () => watch?.servingNow() ?? []);
      // destroy(), not piscina's close(): the work has drained and every thread's turn came after
      // its last task, so there is nothing left for close() to wait for, and close() leaves its
      // own 30 s timeout armed, which (through the pool's listeners) kept this runtime and its
      // buffers reachable for 30 s after close() resolved.
      await pool.destroy();
    } else if (!this.#abandoned) {
      await this.#forced(pool);
    } else {
      await this.#destroyed;
    }
    // Every thread has stopped. One terminated inside a claim's release (a forced close) left
    // that claim's counts behind, which nobody else would ever give back.
    this.#admission[kRecount]();
    this.#force = undefined;
    clearLongTimeout(this.#forceTimer);
    this.#state = 'stopped';
    return { clean, abandoned };
  }
}
