import type { BoundedAdmission } from '../admission/index.js';
import { kRecount } from '../admission/internal.js';
import { clearLongTimeout, type LongTimer, setLongTimeout } from '../long-timeout.js';
// A type only: CloseResult stays declared with Runtime, whose .d.ts is public and must not reach
// this module's (PoolGuard's pool brings in piscina's own .d.ts; see report.ts's PoolCounts).
import type { CloseResult } from '../runtime.js';
import type { PendingTask } from './pending-task.js';
import { destroyPool, idleThreads, teardown, tellStopped } from './pool.js';
import type { PoolGuard } from './pool-guard.js';
import type { ThreadEnds } from './thread-ends.js';
import { within } from './within.js';

/** What a runtime's close() works on. */
export interface ShutdownHost {
  readonly admission: BoundedAdmission;
  /** Calls whose work has not ended, for a close timeout to abandon (see TaskOwner.live). */
  readonly live: Set<PendingTask>;
  readonly guard: PoolGuard;
  /** Bounds each round of close hooks (and the wait for a replacement's ready message). */
  readonly startTimeoutMs: number;
  /** Told once every thread has exited, before close() resolves or later (see tellStopped). */
  readonly ends: ThreadEnds | undefined;
  /** The runtime's state moves to 'draining' (close() began) and then to 'stopped'. */
  draining(): void;
  stopped(): void;
  /**
   * Resolves once every dispatched call has ended on the main thread (piscina has its reply, and
   * has timed it). A thread gives a call's capacity back before it posts the reply, so the
   * admission's drain is heard first, often before the reply is in.
   */
  callsEnded(): Promise<void>;
  /** The close hooks' rounds begin: piscina times them, and they are no calls (see report()). */
  hooksBegin(): void;
}

/**
 * A runtime's close(): stop admitting, drain (or, once a close timeout passes, abandon what is
 * still outstanding), run the threads' close hooks, stop the threads.
 *
 * Invariants: the sequence runs once, whichever close() starts it, and every close() returns
 * its promise; a close timeout only ever brings the end of a wait forward; close() resolves
 * once every thread has stopped, with the admission's counts recounted (a thread terminated
 * inside a claim's release leaves them behind).
 */
export class Shutdown {
  readonly #host: ShutdownHost;
  #closing: Promise<CloseResult> | undefined;
  /**
   * Ends close()'s wait early, for in-flight work or close hooks (armed by a close timeout);
   * unset once close() is over.
   */
  #force: (() => void) | undefined;
  #forceTimer: LongTimer;
  #forceAt = Number.POSITIVE_INFINITY;

  constructor(host: ShutdownHost) {
    this.#host = host;
  }

  /** Starts the sequence once; `timeoutMs` (checked already) arms or brings forward the cut. */
  close(timeoutMs: number | undefined): Promise<CloseResult> {
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

  /** A close timeout armed so far no longer applies; a later one arms afresh. */
  #disarm(): void {
    clearLongTimeout(this.#forceTimer);
    this.#forceAt = Number.POSITIVE_INFINITY;
  }

  /**
   * One teardown turn per thread `reach` names (every thread that serves, for a clean close; the
   * idle ones, for a forced close or a clean one whose wait for replies lapsed): a
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
  async #teardown(cut: Promise<void>, reach: () => number[]): Promise<void> {
    const { guard, startTimeoutMs } = this.#host;
    this.#host.hooksBegin();
    const closed = new Set<number>();
    for (let threads = reach(); ; threads = reach()) {
      if (threads.length > 0) {
        const answered = await teardown(guard.pool, threads.length, startTimeoutMs, cut);
        if (answered === undefined) return;
        for (const id of answered) closed.add(id);
      }
      await guard.watch.caughtUp(cut);
      if (reach().every((id) => closed.has(id))) return;
    }
  }

  /**
   * close()'s timeout passed with calls outstanding, abandoned just before (#abandon: callers
   * reject, capacity comes back, a call still queued never runs), but for those whose work has
   * ended, whose replies are waited for first (see #repliesHeard). A thread running one is
   * terminated without its close hook, since a native call cannot be interrupted; every other
   * thread runs its hook first, in the rounds a clean close runs. That wait and those rounds are
   * bounded as a clean close's are: by startTimeoutMs, or cut short by a later close timeout
   * (the spent one no longer applies). A round reaches the threads idle then, the ones piscina
   * sees up and without a task (with one of them there is no call queued, so the round's
   * messages go one to each at once). A lost thread's replacement that comes up during a
   * round, or a thread whose abandoned call ends (piscina has heard it end) before the last
   * round is over, is idle for the next round. One still running a call then is terminated
   * without its hook. Resolves with destroyPool's answer (`exited`) and the calls cut off whose
   * replies never came (`unheard`, see #repliesHeard).
   */
  async #forced(): Promise<{ exited: boolean; unheard: number }> {
    const { guard } = this.#host;
    const cut = new Promise<void>((resolve) => {
      this.#force = resolve;
    });
    this.#forceAt = Number.POSITIVE_INFINITY;
    // Those whose work had ended stay, until their replies come (see #repliesHeard).
    const unheard = await this.#repliesHeard(cut);
    await this.#teardown(cut, () => idleThreads(guard.pool));
    return { exited: await destroyPool(guard.pool, this.#host.startTimeoutMs, 'removed'), unheard };
  }

  /**
   * Abandons the calls outstanding at close()'s timeout (see #forced); returns those cut off,
   * and those left to their replies (a handler may give up on the request to stop in between:
   * see PendingTask.cutOffLate).
   */
  #abandon(): { cutOff: number; left: PendingTask[] } {
    let cutOff = 0;
    const left: PendingTask[] = [];
    for (const task of [...this.#host.live]) {
      if (task.abandon()) cutOff++;
      else left.push(task);
    }
    return { cutOff, left };
  }

  /**
   * Waits for the replies of calls whose work has ended (their claims released, so none is
   * abandoned): not cut short by the close timeout that came before this wait (it bounded the
   * wait for work), as the threads' termination would lose results posted or about to be,
   * failing calls whose work ended before it while close() counted none abandoned. A reply
   * trails its release by the thread's stdout and stderr draining (piscina posts once they
   * have), which takes turns of this thread's loop. Bounded as the hooks are, against a thread
   * stuck after its release (a handler's microtask), or inside it (terminated there, or blocked
   * as a test's worker is): by startTimeoutMs, or by `cut`, a close timeout given during this
   * wait (a server's next signal: the caller asked for an end now, and with startTimeoutMs
   * Infinity nothing else ends the wait). The calls whose replies have not come then are cut
   * off (PendingTask.replyNotHeard) and returned as a count, which close() adds to `abandoned`:
   * left to the threads' termination, their callers rejected while close() counted none, and a
   * lapse that said nothing left an operator nothing to see why (a warning says so; a cut asked
   * for needs none).
   */
  async #repliesHeard(cut: Promise<void>): Promise<number> {
    const { live, startTimeoutMs } = this.#host;
    if (live.size === 0) return 0;
    const heard = await within(
      Promise.race([this.#host.callsEnded().then(() => true), cut.then(() => false)]),
      startTimeoutMs,
    );
    if (heard === true || live.size === 0) return 0;
    const unheard = [...live];
    if (heard === undefined) {
      process.emitWarning(
        `the replies of ${unheard.length} call(s) whose work had ended did not come within startTimeoutMs (${startTimeoutMs} ms): they are cut off, and their threads stopped`,
        'OmniRuntimeWarning',
      );
    }
    for (const task of unheard) task.replyNotHeard();
    return unheard.length;
  }

  async #shutdown(): Promise<CloseResult> {
    const host = this.#host;
    const { admission, guard } = host;
    host.draining();
    let timedOut = false;
    const expired = new Promise<boolean>((resolve) => {
      this.#force = () => {
        timedOut = true;
        resolve(false);
      };
    });
    // A close timeout given so far bounded the wait for work: disarmed as the drain is heard,
    // not once this resumes from it. One given in between, by a caller's code on that same turn
    // (the last call's capacity came back on this thread: its thread died, its claim
    // reclaimed), came after the drain and cuts what close() waits for next; disarmed as this
    // resumed, it was lost (test/runtime-close-timeout-same-turn.test.ts).
    const drained = admission.close().then(() => {
      if (!timedOut) this.#disarm();
      return true;
    });
    const clean = await Promise.race([drained, expired]);
    let abandoned = clean ? 0 : admission.report().depth;
    guard.tearDown();
    let exited: boolean;
    // An abandoned pool is destroyed already: its queued calls were rejected and reclaimed.
    if (!guard.abandoned && clean) {
      // Every thread runs its worker's close hook: terminated threads run no exit handlers. A
      // hook that never returns is not waited for past startTimeoutMs. A close timeout given
      // before the drain bounded the wait for work, not the hooks (a 0 ms one on an idle runtime
      // must not skip them), nor the wait for trailing replies (firing during it, it cut replies
      // of calls whose work ended in time): disarmed as the drain was heard. One given since (a
      // server's second signal: stop waiting) cuts both short instead of leaving close() to wait
      // out startTimeoutMs.
      const cut = expired.then(() => undefined);
      // The last calls' replies may still be on their way: report() keeps the latency summaries
      // as the hooks begin, and would miss those calls. Those that never came were cut off.
      abandoned = await this.#repliesHeard(cut);
      // A thread whose reply never came is stuck: a round counting it queued a turn it never
      // took, and waited out startTimeoutMs again. Then the idle threads are reached, as a
      // forced close reaches them (one whose reply comes meanwhile is idle for the next round).
      const reach = abandoned > 0 ? () => idleThreads(guard.pool) : () => guard.watch.servingNow();
      await this.#teardown(cut, reach);
      // destroy(), not piscina's close(): the work has drained and every thread's turn came after
      // its last task, so there is nothing left for close() to wait for, and close() leaves its
      // own 30 s timeout armed, which (through the pool's listeners) kept this runtime and its
      // buffers reachable for 30 s after close() resolved.
      exited = await destroyPool(guard.pool, host.startTimeoutMs, 'removed');
    } else if (!guard.abandoned) {
      // Counted as they are cut off: a worker may release its claim after the depth read above
      // (another thread), and that call, left to its reply, is answered with its result.
      const { cutOff, left } = this.#abandon();
      const forced = await this.#forced();
      exited = forced.exited;
      // Every reply is in by now, or its call was cut off as unheard (not cut off late then).
      abandoned = cutOff + forced.unheard + left.filter((task) => task.cutOffLate).length;
    } else {
      exited = (await guard.destroyed) === true;
    }
    // Only once every thread has exited: one still inside a native call past destroyPool's bound
    // may still be using what it holds (its exit tells the owner, after close() has resolved).
    tellStopped(guard.pool, exited, host.ends);
    // Every thread has stopped. One terminated inside a claim's release (a forced close) left
    // that claim's counts behind, which nobody else would ever give back. One not yet exited
    // (`exited` false) is terminated too, held in a native call, after which it runs none of
    // the worker's code (a termination skips the `finally` that releases); a call it was in was
    // cut off, its claim reclaimed here, and a release makes no native call between its two
    // steps: no thread is part-way through one that it will still finish.
    admission[kRecount]();
    this.#force = undefined;
    clearLongTimeout(this.#forceTimer);
    host.stopped();
    return { clean: clean && abandoned === 0, abandoned };
  }
}
