/**
 * ContextReclaim on the main thread alone: `exited(threadId)` closes the contexts recorded for
 * that thread and no other, `stopped()` every one still recorded, each exactly once. Contexts are
 * the C fixture's, opened here and recorded in the ledger as a worker thread records its own, so
 * the fixture's live bytes show each one's fate (a runtime's threads are the other tests': see
 * native-context-reclaim.test.ts).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ContextReclaim } from '../src/linear/context-reclaim.js';
import { ContextLedger } from '../src/native/context-ledger.js';
import {
  FixtureFaults,
  kRawHandle,
  loadNativeLibrary,
  NativeContext,
  type NativeLibrary,
  NativeStatus,
} from '../src/native/index.js';

const library = loadNativeLibrary('fixture');
const faults = new FixtureFaults(library);

/** Opens a fixture context and records it for `threadId`, as workers/native.ts's init does. */
function recordOpened(reclaim: ContextReclaim, threadId: number): void {
  const raw = NativeContext.open(library)[kRawHandle];
  if (typeof raw !== 'bigint')
    throw new TypeError(`a context's handle is a BigInt address, got ${typeof raw}`);
  expect(reclaim.ledger.record(threadId, raw)).toBeGreaterThanOrEqual(0);
}

afterEach(() => {
  vi.restoreAllMocks();
});

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

  // Mutants: a refusal not counted, counted as closed, or warned of under another type
  // (context-reclaim.ts). `refused` is what every runtime test's "none closed twice" reads.
  it('a close the library refuses (a status, or a throw) is counted in refused and warned of, the rest closed', () => {
    const answers = new Map<bigint, () => number>([
      [1n, () => NativeStatus.OK],
      [2n, () => NativeStatus.INVALID_ARGUMENT],
      [
        3n,
        () => {
          throw new TypeError('not a context');
        },
      ],
    ]);
    const closes: bigint[] = [];
    const stub = {
      raw: {
        omni_close: (address: bigint) => {
          closes.push(address);
          return answers.get(address)!();
        },
      },
    } as unknown as NativeLibrary;
    const reclaim = new ContextReclaim(ContextLedger.create(4), stub);
    for (const address of answers.keys()) reclaim.ledger.record(5, address);
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});

    reclaim.exited(5);
    expect(closes).toEqual([1n, 2n, 3n]);
    expect({ closed: reclaim.closed, refused: reclaim.refused }).toEqual({ closed: 1, refused: 2 });
    expect(warning.mock.calls.map((call) => call[1])).toEqual(['OmniRuntimeWarning', 'OmniRuntimeWarning']);
    reclaim.stopped(); // every entry was taken: nothing is closed again
    expect(closes).toHaveLength(3);
  });
});
