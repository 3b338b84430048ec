import type { Piscina } from 'piscina';
import { type AbortFollower, followAbort, signalAborted, unfollowAbort } from './abort-signal.js';
import { BoundedAdmission, type Claim, type Permit } from './admission/index.js';
import { MAX_CLAIM_SLOTS } from './admission/layout.js';
import { taskPost } from './envelope.js';
import { UnavailableError } from './errors.js';
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
import { busyThreads, startPool } from './runtime/pool.js';
import { PoolGuard } from './runtime/pool-guard.js';
import type { TaskReply } from './runtime/protocol.js';
import { abortedBeforeDispatch, refused, waitFailed } from './runtime/refusals.js';
import {
  frozenCounts,
  type PoolCounts,
  type RuntimeReport,
  type RuntimeState,
  runtimeReport,
} from './runtime/report.js';
import { Shutdown } from './runtime/shutdown.js';
import type { ThreadLosses } from './runtime/thread-losses.js';

export type { CloseOptions } from './runtime/options.js';
export type { LatencySummary, RuntimeReport, RuntimeState } from './runtime/report.js';

/** How close() ended: told by the runtime, since its teardown takes time of its own. */
export interface CloseResult {
  /**
   * True when the work drained before any close timeout passed and no call was cut off. False
   * when close()'s timeout passed first, even if every call still out then ended on its own
   * before it could be cut off (`abandoned` 0, each answered with its result: a statement of
   * time, as a server's drain makes it, not of loss), or when a call whose reply had not come
   * was cut off (startTimeoutMs lapsed, or a later close timeout; counted in `abandoned`).
   */
  readonly clean: boolean;
  /**
   * Calls close() cut off: still running or queued at its timeout (one whose work had ended is
   * answered with its result, and not counted), and those whose work had ended but whose reply
   * did not come within startTimeoutMs after, or before a later close() timeout (their threads
   * stuck after, or inside, the release).
   */
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

/** @internal Not exported from the package: run() past its state check (see the method). */
export const kRunFoundReady = Symbol('omni.runtime.runFoundReady');

/** run()'s held follower: the call's own follow (its wait's, its task's) hears the abort. */
const noop = (): void => {};

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
 * cannot be posted to a worker: structured clone refuses it, or a getter in it throws, the
 * `cause`), AbortError, OMNI_ERR_DEADLINE,
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
  /** The guard's pool, read by run() without going through the guard. */
  #pool: Piscina | undefined;
  /** Fails the runtime and abandons the pool when threads are lost for good. */
  #guard: PoolGuard | undefined;
  /** close()'s sequence: made with the pool, run once by the first close(). */
  #shutdown: Shutdown | undefined;
  /** The calls' latency summaries, kept as close()'s hooks begin (their rounds are no calls). */
  #latency: PoolCounts | undefined;
  #inflight = 0;
  /** Calls whose work has not ended, for a close timeout to abandon (see TaskOwner.live). */
  readonly #live = new Set<PendingTask>();
  /** Counted by the pool's guard, read by every dispatched call (thread-losses.ts). */
  readonly #losses: ThreadLosses = { count: 0 };
  /** close() waits for the last of `#live` to end (see ShutdownHost.callsEnded). */
  #callsEnded: (() => void) | undefined;
  #failure: Error | undefined;
  /** whenFailed()'s promise: made once, resolved by #fail with the first failure. */
  readonly #failed: Promise<Error>;
  #announceFailure!: (error: Error) => void;

  private constructor(options: CheckedRuntimeOptions) {
    this.#options = options;
    // Only the resolver is kept: a pending promise holds neither the process nor the runtime.
    this.#failed = new Promise<Error>((resolve) => {
      this.#announceFailure = resolve;
    });
    // checkRuntimeOptions has checked the bound, its claim-slot limit included.
    const bounds = options.admission;
    this.#bounded = bounds !== undefined;
    this.#waits = !bounds || bounds.wait === true;
    // Its bounds alone: `wait` is the runtime's option, no bound.
    this.#admission = new BoundedAdmission(
      bounds ? { requests: bounds.requests, units: bounds.units } : { requests: SERIAL_WINDOW },
    );
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
        if (this.#callsEnded !== undefined && this.#live.size === 0) this.#callsEnded();
      },
      live: this.#live,
      losses: this.#losses,
    };
  }

  /** Starts the threads and resolves once every one has loaded its worker and answered. */
  static async start(options: RuntimeOptions): Promise<Runtime> {
    const runtime = new Runtime(checkRuntimeOptions(options));
    const ends = runtime.#options.threadEnds;
    const loaded = new SharedArrayBuffer(4);
    runtime.#pool = await startPool(
      runtime.#options,
      {
        admission: runtime.#admission.buffer,
        cancel: runtime.#cancel.words.buffer as SharedArrayBuffer,
        loaded,
        module: runtime.#options.moduleUrl,
        data: runtime.#options.workerData,
      },
      ends,
    );
    const guard = new PoolGuard(
      runtime.#pool,
      new Int32Array(loaded),
      runtime.#options.startTimeoutMs,
      (error) => runtime.#fail(error),
      runtime.#losses,
    );
    runtime.#guard = guard;
    runtime.#shutdown = new Shutdown({
      admission: runtime.#admission,
      live: runtime.#live,
      guard,
      startTimeoutMs: runtime.#options.startTimeoutMs,
      ends,
      draining: () => {
        runtime.#state = 'draining';
      },
      stopped: () => {
        runtime.#state = 'stopped';
      },
      callsEnded: () =>
        runtime.#live.size === 0
          ? Promise.resolve()
          : new Promise<void>((resolve) => {
              runtime.#callsEnded = () => {
                runtime.#callsEnded = undefined;
                resolve();
              };
            }),
      hooksBegin: () => {
        runtime.#latency ??= frozenCounts(guard.pool);
      },
    });
    runtime.#state = 'ready';
    return runtime;
  }

  /** Where the runtime is in its life; run() accepts calls only while 'ready'. */
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

  /**
   * Resolves (never rejects) with `failure` as soon as it is set, so a supervisor need not poll
   * `state`; the same promise on every call, pending for good while nothing fails. It follows
   * `failure`, not `state`: a failure during close()'s drain resolves it too, though the state
   * stays 'draining' and ends 'stopped' (see #fail).
   */
  whenFailed(): Promise<Error> {
    return this.#failed;
  }

  /**
   * Runs the worker's handler on `input` (structured-cloned, or moved with `transfer`) behind the
   * admission bound, and resolves with its result. Never throws: every error is a rejection
   * (OMNI_ERR_REJECTED, _TOO_LARGE, _UNAVAILABLE, _INVALID_COST, _INVALID_ARGUMENT, _DEADLINE,
   * _ABORTED, _WORKER_EXITED, _TASK_FAILED, or the handler's own coded error).
   */
  run<O = unknown>(input: unknown, options?: RunOptions): Promise<O> {
    if (this.#state !== 'ready') return this[kEndedEarly]('unavailable', new UnavailableError(this.#state));
    return this[kRunFoundReady](input, options);
  }

  /**
   * @internal run() for a call that found the runtime ready as it came: run()'s own, and
   * LinearRuntime's, whose check comes before caller code of its own (an option's getter, the
   * signal's follow) that may close the runtime. Such a call was made while ready: malformed, it
   * is `invalid`, as here; else the closed admission turns it away (`unavailable`). Checked
   * again here, it was `unavailable` whatever its options, where Runtime.run said `invalid`.
   */
  [kRunFoundReady]<O = unknown>(input: unknown, options?: RunOptions): Promise<O> {
    let call: CheckedRunOptions;
    try {
      call = options === undefined ? this.#defaultCall : checkRunOptions(options, this.#options.deadlineMs);
    } catch (err) {
      return this[kEndedEarly]('invalid', err);
    }
    const signal = call.signal;
    if (signal === undefined) return this.#admitThenRun(input, call) as Promise<O>;
    if (signalAborted(signal)) return Promise.reject(abortedBeforeDispatch(signal, this.#outcomes));
    // Followed here, before admission, and held until the call ends: a signal that takes no
    // listener (Node's addEventListener reads its own `constructor`, the caller's to make throw)
    // is then `invalid` whatever the load. Followed first by whichever step came to it, it was
    // `failed` when admitted at once (the dispatch's follow), `invalid` when it had to queue (the
    // wait's), `refused` when the runtime was full. The later follows find it followed and run no
    // caller code; one listener still serves the signal.
    const held: AbortFollower = { handleEvent: noop };
    try {
      followAbort(signal, held);
    } catch (err) {
      return this[kEndedEarly]('invalid', err);
    }
    // That getter may have aborted it: caught before anything is admitted, as an abort is above.
    const called = signalAborted(signal)
      ? Promise.reject(abortedBeforeDispatch(signal, this.#outcomes))
      : this.#admitThenRun(input, call);
    // Let go in a finally: the promise handed back is its own, so a caller who drops a failed
    // call's promise still hears of it (an unhandled rejection), as without a signal.
    return called.finally(() => unfollowAbort(signal, held)) as Promise<O>;
  }

  /** run() once its options are checked and its signal, if any, followed. */
  #admitThenRun(input: unknown, call: CheckedRunOptions): Promise<unknown> {
    const { cost, deadlineMs } = call;
    const deadlineAt = deadlineMs === undefined ? 0 : Date.now() + deadlineMs;
    if (this.#waits) return this.#admitThenDispatch(input, call, deadlineAt);
    let admitted: ReturnType<BoundedAdmission['tryAdmit']>;
    try {
      admitted = this.#admission.tryAdmit(cost);
    } catch (err) {
      return this[kEndedEarly]('invalid', err); // OMNI_ERR_INVALID_COST
    }
    if (!admitted.ok)
      return Promise.reject(refused(admitted.reason, cost, this.#admission, this.#state, this.#outcomes));
    return this.#dispatch(admitted, input, call, deadlineAt, deadlineMs);
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
      throw waitFailed(err, cost, this.#admission, this.#state, this.#outcomes);
    }
    // The admission stops watching the signal once it grants the permit, and the task starts
    // watching it only at dispatch: an abort in between (even in the same tick as run()) is
    // caught here, before anything reaches a worker.
    if (signal !== undefined && signalAborted(signal)) {
      permit.release();
      throw abortedBeforeDispatch(signal, this.#outcomes);
    }
    // A permit granted before close() still runs (close drains it); 'failed' or 'stopped' do
    // not, nor does anything once the pool has been abandoned.
    if (this.#guard!.abandoned || (this.#state !== 'ready' && this.#state !== 'draining')) {
      permit.release();
      this.#outcomes.unavailable++;
      throw new UnavailableError(this.#state);
    }
    const left = deadlineAt === 0 ? undefined : Math.max(1, deadlineAt - Date.now());
    return this.#dispatch(permit, input, call, deadlineAt, left);
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
        // piscina's move() around an input would be lost inside the message: unwrap it.
        const post = isMovable(input)
          ? taskPost(claim, movedValue(input), deadlineAt, withMovedBuffers(input, call.transfer))
          : taskPost(claim, input, deadlineAt, call.transfer);
        // The caller's signal is never given to piscina: its abort would terminate the thread
        // (mid native call) and free the slot before the work stops.
        task.follow(this.#pool!.run(post) as Promise<TaskReply>);
      } catch (err) {
        // Nothing reached a worker (a move()'s getter threw, say). The task's failure path gives
        // the claim back and ends the call (no thread lost: the input's failure); before there
        // is a task, that is done here.
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

  /**
   * Only a ready runtime turns 'failed'. One draining stays so: close() has refused everything
   * not yet admitted by then, so there is nothing left for 'failed' to refuse, and it ends
   * 'stopped' with `failure` kept.
   */
  #fail(error: Error): void {
    if (this.#state === 'ready') this.#state = 'failed';
    if (this.#failure !== undefined) return;
    // Until its stack is first read, an error keeps the receivers of its captured frames (this
    // runtime among them) alive: a supervisor keeping failures would keep every failed runtime.
    void error.stack;
    this.#failure = error;
    this.#announceFailure(error);
  }

  /** A snapshot of the runtime now (see RuntimeReport); cheap enough to poll. */
  report(): RuntimeReport {
    const pool = this.#pool;
    return runtimeReport(
      this.#state,
      this.#admission.report(),
      this.#bounded,
      this.#latency ?? pool,
      this.#inflight,
      pool ? busyThreads(pool) : 0,
      this.#outcomes,
    );
  }

  /**
   * Stops admitting (run() rejects OMNI_ERR_UNAVAILABLE), lets in-flight and queued work
   * finish, then stops the threads. With `timeoutMs`, work still running then is abandoned (a
   * call whose work has ended is answered: its reply is waited for, see Shutdown):
   * its callers reject, its capacity is reclaimed, and its threads are terminated without their
   * close hooks (the other threads run theirs first, see Shutdown). Termination cannot interrupt a
   * native call: close() resolves once the threads have stopped, so a thread inside one holds
   * it until the call returns (test/runtime-close-native-call.test.ts). Every call returns the
   * same promise; a later call's timeout still applies when it ends the wait sooner (e.g. a
   * server's drain timeout after a plain close()). One given once the work has drained (or a
   * timeout cut it short) cuts short what close() still waits for: replies still on their way
   * (those calls are cut off, and counted in the first promise's `abandoned`) and the close
   * hooks (a server's second signal: stop now). Resolves with whether anything was abandoned
   * (OMNI_ERR_INVALID_ARGUMENT for malformed options).
   */
  close(options?: CloseOptions): Promise<CloseResult> {
    let timeoutMs: number | undefined;
    try {
      timeoutMs = checkCloseOptions(options);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#shutdown!.close(timeoutMs);
  }
}
