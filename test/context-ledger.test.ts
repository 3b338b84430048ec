/**
 * ContextLedger: each recorded context has exactly one taker (its thread's close hook, or the
 * main thread once that thread has exited), and the main thread takes only what it is asked to.
 */
import { describe, expect, it } from 'vitest';
import { ContextLedger } from '../src/native/context-ledger.js';

/** Addresses in numeric order (Array.prototype.sort compares BigInts as strings). */
function sorted(addresses: bigint[]): bigint[] {
  return addresses.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

describe('ContextLedger', () => {
  it('gives an entry to one taker only: the thread, or the main thread, never both', () => {
    const ledger = ContextLedger.create(2);
    const slot = ledger.record(7, 0x1000n);
    expect(slot).toBeGreaterThanOrEqual(0);
    expect(ledger.take(slot, 0x1000n)).toBe(true);
    expect(ledger.take(slot, 0x1000n)).toBe(false);
    expect(ledger.takeAll()).toEqual([]);

    const other = ledger.record(8, 0x2000n);
    expect(ledger.takeThread(8)).toEqual([0x2000n]);
    // The thread's own hook, had it run after all, finds nothing to close.
    expect(ledger.take(other, 0x2000n)).toBe(false);
    expect(ledger.takeAll()).toEqual([]);
  });

  it('keeps a 64-bit address whole, the top bit set included (a tagged pointer)', () => {
    const high = 2n ** 64n - 4096n;
    const ledger = ContextLedger.create(2);
    const slot = ledger.record(7, high);
    // Before: stored in a signed array, it read back negative, so its own thread's take failed
    // (and cleared it: nobody closed it) and the main thread would have closed a wrong address.
    expect(ledger.take(slot, high)).toBe(true);
    ledger.record(8, high);
    expect(ledger.takeThread(8)).toEqual([high]);
  });

  it("takes an exited thread's entries only, and every entry when asked", () => {
    const ledger = ContextLedger.create(4);
    ledger.record(7, 0x1000n);
    const kept = ledger.record(8, 0x2000n);
    ledger.record(7, 0x3000n);
    expect(sorted(ledger.takeThread(7))).toEqual([0x1000n, 0x3000n]);
    expect(ledger.takeThread(7)).toEqual([]);
    // Thread 8's entry is still its own, and its slot was not given to anyone else.
    const reused = ledger.record(9, 0x4000n);
    expect(reused).not.toBe(kept);
    expect(sorted(ledger.takeAll())).toEqual([0x2000n, 0x4000n]);
    expect(ledger.take(kept, 0x2000n)).toBe(false);
  });

  // threadIds count from 1 (the first Worker of a process): the lowest id is an owner like any.
  it("takes the entries of the first worker's thread (threadId 1) as any other's", () => {
    const ledger = ContextLedger.create(2);
    ledger.record(1, 0x1000n);
    expect(ledger.takeThread(1)).toEqual([0x1000n]);
    ledger.record(1, 0x2000n);
    expect(ledger.takeAll()).toEqual([0x2000n]);
  });

  it('frees a slot once its entry is taken, whoever took it', () => {
    const ledger = ContextLedger.create(1);
    const slot = ledger.record(7, 0x1000n);
    expect(ledger.take(slot, 0x1000n)).toBe(true);
    expect(ledger.record(8, 0x2000n)).toBe(slot);
    expect(ledger.takeThread(8)).toEqual([0x2000n]);
    expect(ledger.record(9, 0x3000n)).toBe(slot);
    expect(ledger.unrecorded).toBe(0);
  });

  it('counts a context that finds the ledger full, and records nothing for it', () => {
    const ledger = ContextLedger.create(1);
    ledger.record(7, 0x1000n);
    expect(ledger.record(8, 0x2000n)).toBe(-1);
    expect(ledger.unrecorded).toBe(1);
    // The thread keeps its context to close itself: nobody else can take it.
    expect(ledger.takeThread(8)).toEqual([]);
    expect(ledger.take(-1, 0x2000n)).toBe(false);
    expect(ledger.takeAll()).toEqual([0x1000n]);
  });

  // Mutant: take()'s bound off by one (slot > length): a slot past the end threw a RangeError
  // (Atomics on an index out of range) where the caller is promised false.
  it('refuses a slot out of range, either side, without throwing', () => {
    const ledger = ContextLedger.create(2);
    ledger.record(7, 0x1000n);
    for (const slot of [-1, 2, 3]) expect(ledger.take(slot, 0x1000n)).toBe(false);
    expect(ledger.takeAll()).toEqual([0x1000n]);
  });

  // Mutant: every taken entry handed out, 0 included: the main thread would close address 0 for
  // a thread terminated after claiming its slot, before storing its address (stood in for here
  // by recording 0n).
  it('hands out no address for a slot claimed but never given one, and frees that slot', () => {
    const ledger = ContextLedger.create(2);
    const slot = ledger.record(7, 0n);
    ledger.record(8, 0x2000n);
    expect(ledger.takeThread(7)).toEqual([]);
    expect(ledger.record(9, 0n)).toBe(slot);
    expect(ledger.takeAll()).toEqual([0x2000n]);
  });

  it('another thread sees the same entries (the buffer is shared, not copied)', () => {
    const ledger = ContextLedger.create(2);
    const attached = ContextLedger.attach(structuredClone(ledger.buffer));
    const slot = attached.record(7, 0x1000n);
    expect(ledger.takeThread(7)).toEqual([0x1000n]);
    expect(attached.take(slot, 0x1000n)).toBe(false);
  });
});
