import type { Worker } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import { WorkerExitedError } from '../errors.js';
import { clearLongTimeout, type LongTimer, setLongTimeout, unrefLongTimeout } from '../long-timeout.js';
import { onThreadStart } from './thread-starts.js';

/**
 * Gives the replacement of every lost thread `timeoutMs` to come up, as start() gives the first
 * threads. piscina starts a replacement for a thread that died and sends it calls only once its
 * module has loaded, which in the runtime's entry includes the worker's init: one whose init
 * never finishes would leave the pool a thread short for good, or, if it was the only thread,
 * hold every call queued forever. piscina says a thread is up with 'workerCreate' (on ready).
 *
 * Every other thread piscina starts gets the same bound: once a replacement has ended before it
 * came up, piscina replaces no lost thread, but starts one whenever a call waits and the pool is
 * short, and hands queued calls to a thread still in its init. One whose init never finishes
 * would hold such a call, and a close() waiting for it, forever; past `timeoutMs` it fails the
 * runtime as a stuck replacement does, and is terminated (its call rejects).
 *
 * Invariants: only a thread that was up counts as lost (a replacement that dies before it comes
 * up leaves the serving threads as they were); the n-th lost thread is covered once n
 * replacements are up (replacements are interchangeable: a late one still counts for an
 * earlier loss); `stuck` is called for every loss not covered in time, until stop().
 *
 * It also tells a closing runtime when it has heard of every thread that is up: a thread counts
 * itself in `loaded` (shared memory) before piscina posts its ready message, so a count ahead of
 * the 'workerCreate' events seen means a ready message is still in flight.
 *
 * Memory ordering: `loaded` is only ever read here (Atomics.load); a thread's sequentially
 * consistent add happens before the postMessage of its ready message, so the count can run
 * ahead of the events seen, never behind them.
 * Abort safety: nothing here takes a signal; each due timer is unref'd (a process with nothing else
 * to do may end while one is due) and stop() clears them all. A caughtUp() is cut short by its
 * `cut` promise or its timeout, never left waiting.
 * Throws: nothing. A thread that does not come up in time is reported to `stuck` as a
 * WorkerExitedError (OMNI_ERR_WORKER_EXITED), and the threads not up are terminated.
 */
export class ReplacementWatch {
  readonly #pool: Piscina;
  readonly #timeoutMs: number;
  readonly #stuck: (error: Error) => void;
  /** Each loss not yet covered: its due timer, and how many replacements cover it. */
  readonly #timers = new Map<LongTimer, number>();
  /** Int32[0]: threads whose module has loaded, counted by each thread itself (EntryData.loaded). */
  readonly #loaded: Int32Array;
  /** Loads counted when the watch attached: start() had heard of each (it waited for them). */
  readonly #loadedAtStart: number;
  /** Wakes caughtUp() on every thread that comes up or goes. */
  readonly #wakers = new Set<() => void>();
  /** Threads that are up (their worker loaded and ran init) and still in the pool. */
  readonly #serving: Set<Worker>;
  /** Each thread started since the watch attached and not up yet: its due timer. */
  readonly #starting = new Map<Worker, LongTimer>();
  readonly #unlisten: () => void;
  #lost = 0;
  #up = 0;
  #stopped = false;

  constructor(pool: Piscina, loaded: Int32Array, timeoutMs: number, stuck: (error: Error) => void) {
    this.#pool = pool;
    this.#timeoutMs = timeoutMs;
    this.#stuck = stuck;
    this.#loaded = loaded;
    this.#loadedAtStart = Atomics.load(loaded, 0);
    // Attached after start(): the first threads are up, and their own events emitted by then.
    this.#serving = new Set(pool.threads);
    pool.on('workerCreate', (worker: { id: number }) => {
      this.#up++;
      this.#covered();
      // The thread is alive here, so its threadId still names it (an exited one reads -1).
      const thread = pool.threads.find((t) => t.threadId === worker.id);
      if (thread) {
        this.#serving.add(thread);
        this.#cleared(thread);
      }
      this.#wake();
    });
    this.#unlisten = onThreadStart((thread) => {
      if (!this.#stopped && pool.threads.includes(thread)) this.#starts(thread);
    });
    pool.on('workerDestroy', () => this.#wake());
  }

  /**
   * piscina removed a thread outside teardown. Call once it has left `pool.threads` (piscina
   * emits 'workerDestroy' just before): each serving thread no longer there is lost, and its
   * replacement must be up within the timeout.
   */
  removed(): void {
    const present = new Set(this.#pool.threads);
    for (const thread of this.#serving) {
      if (present.has(thread)) continue;
      this.#serving.delete(thread);
      this.#await();
    }
  }

  /** A serving thread was lost: the next replacement to come up is due within the timeout. */
  #await(): void {
    if (this.#stopped) return;
    const needed = ++this.#lost;
    const timer = setLongTimeout(
      (watch) => {
        watch.#timers.delete(timer);
        if (watch.#stopped || watch.#up >= needed) return;
        watch.#timedOut('a replacement worker thread');
      },
      this.#timeoutMs,
      this,
    );
    // A process with nothing else to do may end while a replacement is still due.
    unrefLongTimeout(timer);
    this.#timers.set(timer, needed);
  }

  /** A thread piscina started (a replacement, or one for a call) must be up within the timeout. */
  #starts(thread: Worker): void {
    const timer = setLongTimeout(
      (watch) => {
        watch.#starting.delete(thread);
        // Its exit or its coming up clears this; both are checked too, as either may have come
        // before this timer was armed (a tick after the thread was made).
        if (watch.#stopped || watch.#serving.has(thread) || !watch.#pool.threads.includes(thread)) return;
        watch.#timedOut('a worker thread started after start() (a replacement, or one for a queued call)');
      },
      this.#timeoutMs,
      this,
    );
    unrefLongTimeout(timer);
    this.#starting.set(thread, timer);
    // One that ends before it comes up is no loss (see the invariants): its bound goes with it.
    thread.once('exit', () => this.#cleared(thread));
  }

  #cleared(thread: Worker): void {
    if (!this.#starting.has(thread)) return;
    clearLongTimeout(this.#starting.get(thread));
    this.#starting.delete(thread);
  }

  /** Some thread did not come up in time (`what`): the runtime fails. */
  #timedOut(what: string): void {
    // Still watching: a thread that serves now may be lost later, and with it the last.
    this.#stuck(
      new WorkerExitedError(
        `${what} did not load and run init within startTimeoutMs (${this.#timeoutMs} ms)`,
      ),
    );
    // piscina also offers queued calls to a thread that is not up yet: one given to a thread
    // that never comes up would wait forever. End those threads; their calls reject.
    if (!this.#stopped) this.#endPending();
  }

  /**
   * Clears the due timers of the losses covered now: a thread that crashes on every call would
   * otherwise leave one armed for startTimeoutMs per crash, long after its replacement came up.
   */
  #covered(): void {
    for (const [timer, needed] of this.#timers) {
      if (this.#up < needed) continue;
      clearLongTimeout(timer);
      this.#timers.delete(timer);
    }
  }

  /** Terminates the threads in the pool that are not up (replacements stuck in init). */
  #endPending(): void {
    for (const thread of this.#pool.threads) if (!this.#serving.has(thread)) void thread.terminate();
  }

  /** Threads that are up now. */
  get serving(): number {
    return this.#serving.size;
  }

  /**
   * threadIds of the threads that are up and still alive. During a close, removed() is not
   * called: a thread lost then is still in the serving set, and is left out here.
   */
  servingNow(): number[] {
    const alive = new Set(this.#pool.threads);
    const ids: number[] = [];
    for (const thread of this.#serving) if (alive.has(thread)) ids.push(thread.threadId);
    return ids;
  }

  /**
   * Resolves once every thread counted as loaded has come up here too ('workerCreate'), or none
   * is left that still could (one may die between the two), once `cut` settles, or after the
   * timeout. A close calls it after a teardown round: a replacement whose init ended while the
   * round ran may have its ready message behind the round's replies, and is then still due a turn.
   */
  async caughtUp(cut: Promise<void>): Promise<void> {
    const until = Date.now() + this.#timeoutMs;
    while (this.#loadedAtStart + this.#up < Atomics.load(this.#loaded, 0) && this.#anyPending()) {
      let wake: () => void = () => {};
      const changed = new Promise<boolean>((resolve) => {
        wake = () => resolve(false);
      });
      this.#wakers.add(wake);
      const timer = setLongTimeout((done) => done(), Math.max(0, until - Date.now()), wake);
      try {
        if (await Promise.race([changed, cut.then(() => true)])) return;
      } finally {
        clearLongTimeout(timer);
        this.#wakers.delete(wake);
      }
      if (Date.now() >= until) return;
    }
  }

  #wake(): void {
    for (const wake of this.#wakers) wake();
  }

  /** Some thread in the pool has not come up (yet). */
  #anyPending(): boolean {
    return this.#pool.threads.some((thread) => !this.#serving.has(thread));
  }

  stop(): void {
    this.#stopped = true;
    this.#unlisten();
    for (const timer of this.#timers.keys()) clearLongTimeout(timer);
    this.#timers.clear();
    for (const timer of this.#starting.values()) clearLongTimeout(timer);
    this.#starting.clear();
  }
}
