/**
 * ReplacementWatch.caughtUp(), which a close() awaits after each round of close hooks: a thread
 * that counted itself loaded may have its ready message ('workerCreate') still on its way. The
 * wait ends at that message, at the cut, or at startTimeoutMs, and its timer goes with it
 * either way: one left armed would hold a closed runtime's process for startTimeoutMs.
 *
 * The window is a race between two threads' messages that a real pool rarely opens, so the pool
 * here is a stand-in: an emitter with piscina's `threads` and events, on a fake clock.
 */
import { EventEmitter } from 'node:events';
import type { Worker } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { ReplacementWatch } from '../src/runtime/replacement-watch.js';

const TIMEOUT_MS = 30_000;

class StandInPool extends EventEmitter {
  readonly threads: Worker[] = [];
}

function thread(threadId: number): Worker {
  return Object.assign(new EventEmitter(), { threadId }) as unknown as Worker;
}

let watch: ReplacementWatch | undefined;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
});

afterEach(() => {
  watch?.stop();
  watch = undefined;
  vi.useRealTimers();
});

/** A watch over one serving thread, and a second thread counted loaded but not heard of yet. */
function lateReadyMessage(): { pool: StandInPool; watch: ReplacementWatch } {
  const pool = new StandInPool();
  const loaded = new Int32Array(new SharedArrayBuffer(4));
  pool.threads.push(thread(1));
  Atomics.store(loaded, 0, 1);
  watch = new ReplacementWatch(pool as unknown as Piscina, loaded, TIMEOUT_MS, () => {});
  pool.threads.push(thread(2));
  Atomics.add(loaded, 0, 1);
  return { pool, watch };
}

/** `promise`, and whether it has settled, without waiting for it. */
function track(promise: Promise<void>): { settled: () => boolean; promise: Promise<void> } {
  let settled = false;
  const done = promise.then(() => {
    settled = true;
  });
  return { settled: () => settled, promise: done };
}

it('waits for the ready message of a thread counted loaded, and its timer goes when it comes', async () => {
  const { pool, watch } = lateReadyMessage();
  const waiting = track(watch.caughtUp(new Promise<void>(() => {})));
  await vi.advanceTimersByTimeAsync(TIMEOUT_MS - 1);
  expect(waiting.settled()).toBe(false);
  expect(vi.getTimerCount()).toBe(1);
  pool.emit('workerCreate', { id: 2 });
  await waiting.promise;
  expect(vi.getTimerCount()).toBe(0);
});

it('gives up at startTimeoutMs when the message never comes', async () => {
  const { watch } = lateReadyMessage();
  const waiting = track(watch.caughtUp(new Promise<void>(() => {})));
  await vi.advanceTimersByTimeAsync(TIMEOUT_MS - 1);
  expect(waiting.settled()).toBe(false);
  await vi.advanceTimersByTimeAsync(1);
  expect(waiting.settled()).toBe(true);
  expect(vi.getTimerCount()).toBe(0);
});

it('ends at the cut (a close timeout), and its timer goes with it', async () => {
  const { watch } = lateReadyMessage();
  let cut!: () => void;
  const waiting = track(watch.caughtUp(new Promise<void>((resolve) => (cut = resolve))));
  await vi.advanceTimersByTimeAsync(0);
  expect(vi.getTimerCount()).toBe(1);
  cut();
  await waiting.promise;
  expect(vi.getTimerCount()).toBe(0);
});

it('a thread that goes before it came up ends the wait: none is left that could', async () => {
  const { pool, watch } = lateReadyMessage();
  const waiting = track(watch.caughtUp(new Promise<void>(() => {})));
  await vi.advanceTimersByTimeAsync(0);
  expect(waiting.settled()).toBe(false);
  pool.threads.pop();
  pool.emit('workerDestroy');
  await waiting.promise;
  expect(vi.getTimerCount()).toBe(0);
});
