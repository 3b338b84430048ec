import { followAbort, signalReason, unfollowAbort } from '../abort-signal.js';
import type { BoundedAdmission, Claim } from '../admission/index.js';
import { AbortError, DeadlineError, WorkerExitedError } from '../errors.js';
import { clearLongTimeout, type LongTimer, setLongTimeout } from '../long-timeout.js';
import { fromWire } from '../wire-error.js';
import type { CancelWords } from './cancel-words.js';
import type { TaskReply } from './protocol.js';
import { taskFailure } from './task-failure.js';
import type { ThreadLosses } from './thread-losses.js';

/** How each call ended, as its caller saw it. */
export interface Outcomes {
  /** Calls whose handler returned a result to its caller. */
  completed: number;
  /**
   * Calls that ended in an error of the work (the handler threw, the thread died, an input or
   * result that could not be posted).
   */
  failed: number;
  /** Calls ended by their caller's signal (OMNI_ERR_ABORTED). */
  aborted: number;
  /** Calls whose deadline passed (OMNI_ERR_DEADLINE; with `wait`, a wait that timed out too). */
  deadline: number;
  /** Calls the admission refused at once (OMNI_ERR_REJECTED, OMNI_ERR_TOO_LARGE). */
  refused: number;
  /** Malformed calls (options, cost, input), rejected before anything was admitted. */
  invalid: number;
  /**
   * Calls made while the runtime was not ready (starting, draining, stopped, failed), and calls
   * waiting for admission (`wait`) that close() turned away.
   */
  unavailable: number;
}

/** Every count at zero: a runtime's start, before any call. */
export function noOutcomes(): Outcomes {
  return { completed: 0, failed: 0, aborted: 0, deadline: 0, refused: 0, invalid: 0, unavailable: 0 };
}

export interface TaskOwner {
  readonly admission: BoundedAdmission;
  readonly cancel: CancelWords;
  readonly outcomes: Outcomes;
  /** A worker reported a sticky error (e.g. a CUDA context that is gone). */
  fail(error: Error): void;
  /** The work behind a call has ended (whether or not its caller still waited). */
  ended(): void;
  /**
   * Every call dispatched whose work has not ended: what a close timeout abandons. A task is in
   * it from construction until its work ends (or it is abandoned).
   */
  readonly live: Set<PendingTask>;
  /** Threads lost so far: one lost while a call is out may have held it. */
  readonly losses: ThreadLosses;
}

function fireDeadline(task: PendingTask): void {
  task.deadline();
}

/**
 * One dispatched call. The caller's promise may settle early (abort, deadline), but the
 * claim, and with it the capacity, is only given back when piscina reports that the work
 * itself has ended: by the worker in its `finally`, or here by reclaim if the worker died.
 */
export class PendingTask {
  readonly #owner: TaskOwner;
  readonly #claim: Claim;
  readonly #resolve: (value: unknown) => void;
  readonly #reject: (err: Error) => void;
  readonly #signal: AbortSignal | undefined;
  /** The owner's losses when the call was dispatched. */
  readonly #losses: number;
  #timer: LongTimer;
  #callerSettled = false;
  #workEnded = false;
  /** close()'s timeout asked this call to stop and found its claim released (see abandon). */
  #closeAsked = false;
  #cutOffLate = false;

  constructor(
    owner: TaskOwner,
    claim: Claim,
    resolve: (value: unknown) => void,
    reject: (err: Error) => void,
    signal: AbortSignal | undefined,
    deadlineMs: number | undefined,
  ) {
    this.#owner = owner;
    this.#claim = claim;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#signal = signal;
    this.#losses = owner.losses.count;
    if (signal) followAbort(signal, this);
    // One plain setTimeout for any deadline up to ~24.8 days; longer ones re-arm in steps.
    if (deadlineMs !== undefined) this.#timer = setLongTimeout(fireDeadline, deadlineMs, this);
    // Last: a constructor that throws (a signal that takes no listener) leaves no task, and the
    // dispatch ends the call itself; one left in `live` would be ended again by a close timeout.
    owner.live.add(this);
  }

  /** Follows the piscina promise of the dispatched task message. */
  follow(work: Promise<TaskReply>): void {
    work.then(
      (reply) => this.#onReply(reply),
      (err: unknown) => this.#onFailure(err),
    );
  }

  /** The caller's signal aborted: reject it now, ask the worker to stop, keep the capacity. */
  handleEvent(): void {
    if (!this.#settle()) return;
    this.#askToStop();
    this.#owner.outcomes.aborted++;
    this.#reject(
      new AbortError('the caller aborted; the work may still be running', {
        cause: this.#signal && signalReason(this.#signal),
      }),
    );
  }

  deadline(): void {
    this.#timer = undefined;
    if (!this.#settle()) return;
    this.#askToStop();
    this.#missedDeadline();
  }

  #missedDeadline(): void {
    this.#owner.outcomes.deadline++;
    this.#reject(new DeadlineError());
  }

  /** Only while the work may still run: once it has ended, its slot may be another task's. */
  #askToStop(): void {
    if (!this.#workEnded) this.#owner.cancel.request(this.#claim);
  }

  #onReply(reply: TaskReply): void {
    this.#ended();
    if (reply.ok) {
      if (!this.#settle()) return;
      this.#owner.outcomes.completed++;
      this.#resolve(reply.value);
    } else if ('skipped' in reply) {
      // Skipped, or given up, because the caller left; if the worker's clock saw the deadline
      // first, say so. Given up on close()'s request (see abandon), it was cut off by close().
      if (this.#closeAsked && reply.skipped === 'aborted') this.#cutOffLate = this.#cutOffByClose();
      else if (this.#settle()) this.#missedDeadline();
    } else {
      const error = fromWire(reply.error);
      if (reply.error.fatal === true) this.#owner.fail(error);
      this.#failedWith(error);
    }
  }

  #onFailure(err: unknown): void {
    // No reply. The reclaim wins when no worker released the claim: it died (exit, uncaught
    // error, termination) before its finally, or the input could not even be posted (then no
    // thread was lost meanwhile). It is a no-op when the worker did release (e.g. its reply
    // could not be posted back).
    const reclaimed = this.#ended();
    this.#failedWith(taskFailure(err, reclaimed, this.#owner.losses.count !== this.#losses));
  }

  /** Rejects the caller with `error`, counted failed; false when it had settled already. */
  #failedWith(error: Error): boolean {
    if (!this.#settle()) return false;
    this.#owner.outcomes.failed++;
    this.#reject(error);
    return true;
  }

  /**
   * close()'s timeout cut this call off: its caller rejects now and its capacity comes back,
   * though a thread may still be running it (that thread is terminated next, a native call
   * only once it returns). Asked to stop first: a call still queued is then skipped, never
   * run, by a thread that takes it before the pool is gone. What piscina reports for it later
   * finds the call over. A call whose worker has released its claim is left to its reply: its
   * work ended before the cut, and only the reply is on its way (piscina posts it once the
   * thread's stdout and stderr have drained, which takes turns of this thread's loop).
   * Returns true when it cut the call off (close()'s `abandoned` counts those).
   */
  abandon(): boolean {
    this.#askToStop();
    if (!this.#owner.admission.reclaim(this.#claim)) {
      // Released on the worker: before the request, or after it (another thread), by a handler
      // that gave up on it. The reply tells which: see cutOffLate.
      this.#closeAsked = true;
      return false;
    }
    this.#ended();
    this.#cutOffByClose();
    return true;
  }

  /** Its caller hears close()'s timeout; false when it had settled already. */
  #cutOffByClose(): boolean {
    return this.#failedWith(new WorkerExitedError("close()'s timeout abandoned the call before it ended"));
  }

  /**
   * Its handler gave up on close()'s request to stop (abandon found the claim released just
   * after asking), and its caller heard close()'s decision then: a call close() cut off, which
   * its `abandoned` counts once the replies are in.
   */
  get cutOffLate(): boolean {
    return this.#cutOffLate;
  }

  /**
   * close() waited for this call's reply as long as it waits (see Shutdown) after the worker
   * released its claim, and none came: its thread is stuck after the release, or inside it (its
   * counts then come back with close()'s recount). Cut off as abandon() cuts, so its caller
   * hears close()'s decision, counted in `abandoned`, before the thread is stopped; a reply that
   * comes later finds the call over.
   */
  replyNotHeard(): void {
    this.#askToStop();
    this.#ended();
    this.#failedWith(new WorkerExitedError('close() stopped its thread before its reply came'));
  }

  /**
   * The work has ended (or was abandoned; then once only). Returns true when this call, not
   * the worker, gave the capacity back.
   */
  #ended(): boolean {
    if (this.#workEnded) return false;
    this.#workEnded = true;
    this.#owner.live.delete(this);
    // After a reply the worker has released already (workers/entry.ts, before the reply exists)
    // and this finds the claim spent, ~30 ns (bench/claim-reclaim.bench.ts), too little for
    // bench:runtime to show. Kept: nothing else would give the capacity back should a reply
    // ever come without that release (test/runtime-reply-release.test.ts holds the worker to it).
    const reclaimed = this.#owner.admission.reclaim(this.#claim);
    this.#detach();
    this.#owner.ended();
    return reclaimed;
  }

  /** Marks the caller's promise as settled; false if it already was. */
  #settle(): boolean {
    if (this.#callerSettled) return false;
    this.#callerSettled = true;
    this.#detach();
    return true;
  }

  #detach(): void {
    if (this.#timer !== undefined) clearLongTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#signal) unfollowAbort(this.#signal, this);
  }
}
