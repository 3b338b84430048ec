/**
 * A cancel reaches only its own task. The worker frees a claim slot in its `finally`, before
 * the main thread has read the reply, so a new task can take the slot while the old task's
 * caller is still waiting; that caller's late abort or deadline must not touch the new task.
 * The window is held open by a synchronous wait on the shared depth word (the worker's
 * release): the main thread cannot read the old task's reply during it.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CancelWords, cancelledWord, isCancelled } from '../src/runtime/cancel-words.js';
import { WorkerTaskContext } from '../workers/task-context.js';
import { INVOKED, open, STARTED, waitFor } from './fixtures/runtime-control.js';
import {
  cleanupOnRealClock,
  codeOf,
  control,
  gate,
  start,
  turns,
  until,
} from './fixtures/runtime-harness.js';

afterEach(cleanupOnRealClock);

type Started = Awaited<ReturnType<typeof start>>;

/** Blocks this thread until the workers have released every claim (a bound, not an ordering). */
function untilReleasedHere(rt: Started): void {
  const giveUpAt = Date.now() + 20_000;
  while (rt.report().depth !== 0) {
    if (Date.now() > giveUpAt) throw new Error('the worker never released its claim');
  }
}

function counted(c: Int32Array) {
  return { mode: 'echo' as const, control: c.buffer as SharedArrayBuffer };
}

describe('a stale cancel never reaches the slot’s next task', () => {
  it('an abort of a task whose work ended does not erase the next task’s own cancel', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1 } });
    const a = control();
    const b = control();
    const acA = new AbortController();
    const acB = new AbortController();
    const first = rt.run(gate(a, { value: 'A' }), { signal: acA.signal });
    await waitFor(a, STARTED, 1, first);
    open(a);
    untilReleasedHere(rt); // A's work has ended; its reply is not read yet
    // B takes A's slot (the only one) and queues behind A's thread; its caller leaves at once.
    const second = codeOf(rt.run(counted(b), { signal: acB.signal }));
    acB.abort();
    acA.abort(); // A's caller leaves too, after B's cancel was written
    expect(await codeOf(first)).toBe('OMNI_ERR_ABORTED');
    expect(await second).toBe('OMNI_ERR_ABORTED');
    await until(() => rt.report().depth === 0, 'depth 0');
    // B's caller left before B started: it was skipped, never run.
    expect(Atomics.load(b, INVOKED)).toBe(0);
    expect(rt.report()).toMatchObject({ aborted: 2, completed: 0 });
  });

  it('a task the worker skipped for its deadline does not cancel the next task in its slot', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const g = control();
    const skipped = control();
    const b = control();
    const c = control();
    const held = rt.run(gate(g, { value: 'G' }));
    await waitFor(g, STARTED, 1, held);
    // The main thread's deadline timer never fires: only the worker's clock sees this deadline.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const late = rt.run(counted(skipped), { deadlineMs: 1 });
    vi.useRealTimers();
    const dispatchedAt = Date.now();
    while (Date.now() <= dispatchedAt + 1) {} // the deadline has passed on every thread's clock
    open(g);
    await expect(held).resolves.toBe('G');
    untilReleasedHere(rt); // the worker skipped the late task; its reply is not read yet
    // Slots are taken round-robin: B gets G's, C gets the skipped task's. C's caller leaves.
    const second = rt.run(gate(b, { value: 'B' }));
    const ac = new AbortController();
    const third = codeOf(rt.run(counted(c), { signal: ac.signal }));
    ac.abort();
    expect(await codeOf(late)).toBe('OMNI_ERR_DEADLINE');
    expect(await third).toBe('OMNI_ERR_ABORTED');
    open(b);
    await expect(second).resolves.toBe('B');
    await until(() => rt.report().depth === 0, 'depth 0');
    expect(Atomics.load(skipped, INVOKED)).toBe(0);
    expect(Atomics.load(c, INVOKED)).toBe(0);
    expect(rt.report()).toMatchObject({ deadline: 1, aborted: 1, completed: 2 });
  });
});

describe('ctx.signal', () => {
  it('still aborts on a real cancel after a wake that was not one', async () => {
    const words = new Int32Array(new SharedArrayBuffer(8));
    const claim = { admission: 1, slot: 1, generation: 5, units: 1 };
    const ctx = new WorkerTaskContext(words, claim, 1, 0);
    const signal = ctx.signal;
    const aborted = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
    await turns(1); // the context arms its wait on this thread's next turn (immediates run in order)
    // Queued behind the context's waiter: woken by the same notify, resumed after it.
    const behind = Atomics.waitAsync(words, 1, 0);
    Atomics.store(words, 1, cancelledWord({ ...claim, generation: 4 }));
    expect(Atomics.notify(words, 1)).toBe(2);
    if (behind.async) await behind.value;
    expect(signal.aborted).toBe(false);
    // The context is waiting again, so the real cancel wakes it.
    Atomics.store(words, 1, cancelledWord(claim));
    expect(Atomics.notify(words, 1)).toBe(1);
    await aborted;
    expect(signal.aborted).toBe(true);
    ctx.finish();
  });

  // Mutant: the getter leaving a cancel that came before the first read to its wait, armed a
  // turn later (workers/task-context.ts): a handler that checks ctx.signal.aborted before a
  // synchronous or native step would start work its caller already gave up.
  it('is aborted at once when read after its cancel', () => {
    const words = new Int32Array(new SharedArrayBuffer(8));
    const claim = { admission: 1, slot: 1, generation: 5, units: 1 };
    Atomics.store(words, 1, cancelledWord(claim));
    const ctx = new WorkerTaskContext(words, claim, 1, 0);
    const signal = ctx.signal;
    expect({ aborted: signal.aborted, stoppedBy: ctx.stoppedBy(signal.reason) }).toEqual({
      aborted: true,
      stoppedBy: 'aborted',
    });
    ctx.finish();
  });

  // The wait is armed on the thread's next turn: a cancel notified before then wakes nobody, and
  // must still be seen when the wait is armed.
  it('aborts on a cancel that came before its wait was armed', async () => {
    const words = new Int32Array(new SharedArrayBuffer(8));
    const claim = { admission: 1, slot: 1, generation: 5, units: 1 };
    const ctx = new WorkerTaskContext(words, claim, 1, 0);
    const signal = ctx.signal;
    const aborted = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
    Atomics.store(words, 1, cancelledWord(claim));
    expect(Atomics.notify(words, 1)).toBe(0);
    await aborted;
    expect({ aborted: signal.aborted, stoppedBy: ctx.stoppedBy(signal.reason) }).toEqual({
      aborted: true,
      stoppedBy: 'aborted',
    });
    ctx.finish();
  });
});

describe("a slot's cancel word", () => {
  // The word keeps only a generation's low 31 bits: one left from 2^31 reuses of the slot ago
  // reads as the new claim's own cancel unless dispatch clears it.
  it('starts uncancelled for each claim dispatched, even one whose word would match a stale cancel', () => {
    const words = new CancelWords(1);
    const old = { admission: 1, slot: 0, generation: 5, units: 1 };
    words.dispatched(old);
    words.request(old);
    expect(isCancelled(words.words, old)).toBe(true);
    const next = { ...old, generation: old.generation + 2 ** 31 };
    expect(cancelledWord(next)).toBe(cancelledWord(old));
    words.dispatched(next);
    expect(isCancelled(words.words, next)).toBe(false);
    words.request(next);
    expect(isCancelled(words.words, next)).toBe(true);
  });
});
