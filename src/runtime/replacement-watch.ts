import type { Piscina } from 'piscina';
import { WorkerExitedError } from '../errors.js';
import { clearLongTimeout, type LongTimer, setLongTimeout } from '../long-timeout.js';

/**
 * Gives the replacement of every lost thread `timeoutMs` to come up, as start() gives the first
 * threads. piscina starts a replacement for a thread that died and sends it calls only once its
 * module has loaded, which in the runtime's entry includes the worker's init: one whose init
 * never finishes would leave the pool a thread short for good, or, if it was the only thread,
 * hold every call queued forever. piscina says a thread is up with 'workerCreate' (on ready).
 *
 * Invariants: the n-th lost thread is covered once n replacements are up (replacements are
 * interchangeable: a late one still counts for an earlier loss); `stuck` is called at most once.
 */
export class ReplacementWatch {
  readonly #timeoutMs: number;
  readonly #stuck: (error: Error) => void;
  readonly #timers = new Set<LongTimer>();
  #lost = 0;
  #up = 0;
  #stopped = false;

  constructor(pool: Piscina, timeoutMs: number, stuck: (error: Error) => void) {
    this.#timeoutMs = timeoutMs;
    this.#stuck = stuck;
    // Attached after start(): the first threads' own events have been emitted by then.
    pool.on('workerCreate', () => {
      this.#up++;
    });
  }

  /** A thread was lost outside teardown: its replacement must be up within the timeout. */
  lost(): void {
    if (this.#stopped) return;
    const needed = ++this.#lost;
    const timer = setLongTimeout(
      (watch) => {
        watch.#timers.delete(timer);
        if (watch.#stopped || watch.#up >= needed) return;
        watch.stop();
        watch.#stuck(
          new WorkerExitedError(
            `a replacement worker thread did not load and run init within startTimeoutMs (${watch.#timeoutMs} ms)`,
          ),
        );
      },
      this.#timeoutMs,
      this,
    );
    // A process with nothing else to do may end while a replacement is still due.
    (timer as { unref?: () => void } | undefined)?.unref?.();
    this.#timers.add(timer);
  }

  /** Threads that are up now, of the `threads` that start() brought up. */
  serving(threads: number): number {
    return threads - this.#lost + this.#up;
  }

  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers) clearLongTimeout(timer);
    this.#timers.clear();
  }
}
