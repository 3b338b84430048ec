/**
 * ContextReclaim on the main thread alone: `exited(threadId)` closes the contexts recorded for
 * that thread and no other, `stopped()` every one still recorded, each exactly once. Contexts are
 * the C fixture's, opened here and recorded in the ledger as a worker thread records its own, so
 * the fixture's live bytes show each one's fate (a runtime's threads are the other tests': see
 * native-context-reclaim.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { ContextReclaim } from '../src/linear/context-reclaim.js';
import { FixtureFaults, kRawHandle, loadNativeLibrary, NativeContext } from '../src/native/index.js';

const library = loadNativeLibrary('fixture');
const faults = new FixtureFaults(library);

/** Opens a fixture context and records it for `threadId`, as workers/native.ts's init does. */
function recordOpened(reclaim: ContextReclaim, threadId: number): void {
  const raw = NativeContext.open(library)[kRawHandle];
  if (typeof raw !== 'bigint')
    throw new TypeError(`a context's handle is a BigInt address, got ${typeof raw}`);
  expect(reclaim.ledger.record(threadId, raw)).toBeGreaterThanOrEqual(0);
}

describe('ContextReclaim', () => {
  it('"one opened when the record was full (2 x threads contexts ...)": the 2 x threads + 1st is not recorded', () => {
    const reclaim = ContextReclaim.forThreads(3, library);
    // Addresses are only recorded, never closed here: every entry is taken back below.
    for (let threadId = 1; threadId <= 6; threadId++) {
      expect(reclaim.ledger.record(threadId, BigInt(threadId))).toBeGreaterThanOrEqual(0);
    }
    expect(reclaim.ledger.record(7, 7n)).toBe(-1);
    expect(reclaim.ledger.unrecorded).toBe(1);
    expect(reclaim.ledger.takeAll()).toEqual([1n, 2n, 3n, 4n, 5n, 6n]);
  });

  // Mutants: exited or stopped closing nothing (context-reclaim.ts): a runtime's tests reach
  // stopped's sweep only for a thread that ended unseen, and none does there.
  it("exited closes that thread's contexts only; stopped every one left; none twice", () => {
    const before = faults.liveBytes();
    const reclaim = ContextReclaim.forThreads(2, library);
    recordOpened(reclaim, 7);
    const perContext = faults.liveBytes() - before;
    expect(perContext).toBeGreaterThan(0);
    recordOpened(reclaim, 8);
    recordOpened(reclaim, 7);
    recordOpened(reclaim, 9);

    reclaim.exited(7);
    expect(reclaim.closed).toBe(2);
    expect(faults.liveBytes() - before).toBe(2 * perContext);
    reclaim.exited(7); // told again: nothing of its is left
    reclaim.exited(10); // a thread that recorded nothing
    expect(reclaim.closed).toBe(2);

    reclaim.stopped();
    expect(faults.liveBytes()).toBe(before);
    expect({ closed: reclaim.closed, refused: reclaim.refused }).toEqual({ closed: 4, refused: 0 });
    reclaim.stopped();
    expect(reclaim.closed).toBe(4);
  });
});
