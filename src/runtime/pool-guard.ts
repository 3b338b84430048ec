import type { Piscina } from 'piscina';
import { WorkerExitedError } from '../errors.js';
import { destroyPool } from './pool.js';
import { ReplacementWatch } from './replacement-watch.js';
import type { ThreadLosses } from './thread-losses.js';

/**
 * Looks after a started pool's threads until close() takes them over. piscina replaces a dead
 * worker, but stops for good once a replacement fails while starting, and a replacement may
 * never come up (the ReplacementWatch's timeout): a pool left with no thread would queue calls
 * forever. The guard fails the runtime then and abandons the pool, so queued calls reject and
 * their capacity is reclaimed.
 *
 * Invariants: the pool is abandoned at most once, and never once close() is tearing it down
 * (its threads' exits are close()'s own then); `abandoned` is set in the turn destroy() starts.
 */
export class PoolGuard {
  readonly pool: Piscina;
  readonly watch: ReplacementWatch;
  /** close() is stopping the threads itself: their exits are no longer a lost pool. */
  tearingDown = false;
  /** The pool was destroyed after losing every thread: close() must not send it more work. */
  abandoned = false;
  /**
   * The abandoned pool's destroy(): close() resolves only once its threads are gone. True once
   * every thread has exited (see destroyPool).
   */
  destroyed: Promise<boolean> | undefined;
  /** Counted here, read by every dispatched call (see ThreadLosses). */
  readonly #losses: ThreadLosses;
  readonly #fail: (error: Error) => void;
  readonly #startTimeoutMs: number;

  /**
   * `loaded`: the entry's count of threads whose module has loaded (EntryData.loaded); `fail`
   * moves the runtime to 'failed' (a lost thread not replaced in time, or every thread gone).
   */
  constructor(
    pool: Piscina,
    loaded: Int32Array,
    startTimeoutMs: number,
    fail: (error: Error) => void,
    losses: ThreadLosses,
  ) {
    this.pool = pool;
    this.#losses = losses;
    this.#fail = fail;
    this.#startTimeoutMs = startTimeoutMs;
    const watch = new ReplacementWatch(pool, loaded, startTimeoutMs, (error) => {
      fail(error);
      // No thread left that could take the queued calls: give them back now (this may come
      // with a later loss, after the runtime has failed with a thread still serving).
      if (watch.serving <= 0) this.abandon();
    });
    this.watch = watch;
    // piscina removes a dead worker and starts its replacement in the same turn; look after it
    // once the worker has left pool.threads (it emits just before).
    pool.on('workerDestroy', () => {
      this.#losses.count++;
      queueMicrotask(() => {
        if (!this.tearingDown && !this.abandoned) watch.removed();
        this.#checkThreads();
      });
    });
  }

  /** close() stops the threads from here on: no exit is a loss any more, nor is one due. */
  tearDown(): void {
    this.#losses.count++;
    this.tearingDown = true;
    this.watch.stop();
  }

  /**
   * A pool with no thread left (piscina gave up replacing them) can serve nothing. During
   * close()'s drain a lost pool must still be abandoned: its queued calls would otherwise never
   * end and the drain never finish. Only teardown's own exits are expected.
   */
  #checkThreads(): void {
    if (this.tearingDown || this.abandoned || this.pool.threads.length > 0) return;
    this.#fail(new WorkerExitedError('every worker thread has exited and none could be restarted'));
    this.abandon();
  }

  /** Destroys a pool that cannot serve: its queued calls reject and their capacity is reclaimed. */
  abandon(): void {
    if (this.abandoned || this.tearingDown) return;
    this.#losses.count++;
    this.abandoned = true;
    this.watch.stop();
    this.destroyed = destroyPool(this.pool, this.#startTimeoutMs, 'removed');
  }
}
