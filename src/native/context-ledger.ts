/**
 * ContextLedger: shared memory where each worker thread records the native context it holds, so
 * that the main thread can close the context of a thread that ended without its close hook (a
 * forced close terminates a thread held in a call; a thread may die mid-life). Contexts are not
 * bound to a thread (native/include/omni.h), and a terminated thread stops only once its native
 * call has returned: once its 'exit' has happened, nothing uses its context any more.
 *
 * Layout: `slots` BigUint64 addresses (unsigned: an address with its top bit set reads back as
 * itself), then `slots` Int32 owners (the threadId holding the slot; 0: free), then one Int32
 * counting contexts that found the ledger full.
 *
 * Invariants: each recorded context is closed exactly once, by whoever takes its entry (swaps
 * its address for 0): the thread itself in its close hook (or its init's failure path), or the
 * main thread for a thread that has exited. The main thread only ever takes the entries of
 * threads that have exited (or, once every thread has exited, all of them), so it never closes
 * a context in use. A thread ended between opening its context and recording it, or between
 * taking its entry and closing it, loses that context (as every thread did before the ledger);
 * so does one that found the ledger full (counted in `unrecorded`), which still closes its own
 * in its close hook.
 * Memory ordering: a slot is claimed (owner 0 -> threadId) before its address is stored, and
 * freed (owner -> 0) only after its address has been taken; both by sequentially consistent
 * Atomics, so a slot's next owner never sees a stale address.
 * Abort safety: no waiting, no allocation; a thread terminated at any point leaves either an
 * entry the main thread takes, or none.
 * Throws: nothing (a full ledger is counted, not thrown).
 */

/** Bytes per slot: one BigUint64 address and one Int32 owner. */
const SLOT_BYTES = 12;

export class ContextLedger {
  readonly buffer: SharedArrayBuffer;
  readonly #addresses: BigUint64Array;
  readonly #owners: Int32Array;
  /** Int32[0]: contexts that found every slot taken. */
  readonly #unrecorded: Int32Array;

  private constructor(buffer: SharedArrayBuffer) {
    const slots = (buffer.byteLength - 4) / SLOT_BYTES;
    this.buffer = buffer;
    this.#addresses = new BigUint64Array(buffer, 0, slots);
    this.#owners = new Int32Array(buffer, slots * 8, slots);
    this.#unrecorded = new Int32Array(buffer, slots * SLOT_BYTES, 1);
  }

  /** A ledger with room for `slots` contexts at once (threads alive at once, exiting ones included). */
  static create(slots: number): ContextLedger {
    return new ContextLedger(new SharedArrayBuffer(slots * SLOT_BYTES + 4));
  }

  /** The same ledger in another thread (its buffer came through workerData). */
  static attach(buffer: SharedArrayBuffer): ContextLedger {
    return new ContextLedger(buffer);
  }

  /** Contexts that found the ledger full: the main thread cannot give them back. */
  get unrecorded(): number {
    return Atomics.load(this.#unrecorded, 0);
  }

  /**
   * A worker thread records the context it has just opened. Returns its slot, or -1 when the
   * ledger is full (the thread then closes its context itself, as before, or loses it).
   */
  record(threadId: number, address: bigint): number {
    const owners = this.#owners;
    for (let slot = 0; slot < owners.length; slot++) {
      // Claims the slot first: no other thread may store into it from here on.
      if (Atomics.compareExchange(owners, slot, 0, threadId) !== 0) continue;
      Atomics.store(this.#addresses, slot, address);
      return slot;
    }
    Atomics.add(this.#unrecorded, 0, 1);
    return -1;
  }

  /**
   * The recording thread takes its own entry back before closing its context. False when it is
   * not there (never recorded, or taken already): the caller must not close the context then.
   */
  take(slot: number, address: bigint): boolean {
    if (slot < 0 || slot >= this.#owners.length) return false;
    // The one step that decides who closes the context: only one taker sees its address.
    if (Atomics.compareExchange(this.#addresses, slot, address, 0n) !== address) return false;
    // Freed after the address is gone: the slot's next owner starts from an empty entry.
    Atomics.store(this.#owners, slot, 0);
    return true;
  }

  /** The main thread takes the entries of a thread that has exited: addresses to close. */
  takeThread(threadId: number): bigint[] {
    return this.#takeWhere((owner) => owner === threadId);
  }

  /** The main thread takes every entry: only once every thread that could record has exited. */
  takeAll(): bigint[] {
    return this.#takeWhere((owner) => owner !== 0);
  }

  #takeWhere(matches: (owner: number) => boolean): bigint[] {
    const taken: bigint[] = [];
    const owners = this.#owners;
    for (let slot = 0; slot < owners.length; slot++) {
      if (!matches(Atomics.load(owners, slot))) continue;
      // An owner recorded but terminated before storing its address leaves 0 here: nothing to
      // close.
      const address = Atomics.exchange(this.#addresses, slot, 0n);
      Atomics.store(owners, slot, 0); // after the address is gone, as in take()
      if (address !== 0n) taken.push(address);
    }
    return taken;
  }
}
