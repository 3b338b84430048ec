import { signalAborted } from '../abort-signal.js';
import {
  ClosedError,
  describeValue,
  InvalidArgumentError,
  InvalidClaimError,
  PermitReleasedError,
  TooLargeError,
} from '../errors.js';
import { attachedBounds, createAdmissionBuffer } from './admission-buffer.js';
import type { AdmissionReport } from './admission-report.js';
import { type AdmitOptions, invalidAdmitOptions } from './admit-options.js';
import { type AdmissionBounds, checkBounds, invalidCost, isValidCost } from './bounds.js';
import { ClaimTable, NOT_A_CLAIM, SPENT } from './claims.js';
import { type Claim, kClaim, kRecount, kRelease, type PermitOwner } from './internal.js';
import {
  CLOSED_BIT_32,
  CLOSED_BIT_64,
  FLAGS_64,
  LEAKED_U64,
  MAX_CLAIM_SLOTS,
  NARROW_FIELD_MASK,
  REJECTED_U64,
  SEQ_I32,
  SLOTS_I32,
  STATE_I32,
  STATE_U64,
  WAITERS_I32,
  WAITING_BIT_32,
  WAITING_BIT_64,
} from './layout.js';
import { LeakGuard, type LeakSink } from './leak-guard.js';
import { Permit } from './permit.js';
import {
  REFUSED_CLOSED,
  REFUSED_QUEUED,
  REFUSED_REQUESTS,
  REFUSED_TOO_LARGE,
  REFUSED_UNITS,
  type Refusal,
} from './refusal.js';
import { StateFlags } from './state-flags.js';
import { abortError, WaitingRoom } from './waiting-room.js';

/**
 * The wide word works on BigInts; converting per admit (BigInt(cost), Number(word & mask)) costs
 * more than the compare-exchange itself, so the delta and the room for small costs are
 * precomputed and the check stays in BigInt.
 */
const DELTA_CACHE = 512;

/**
 * Wrong guesses of the 64-bit word (see #before64) before the guess is dropped and taken afresh
 * from a word read: often enough to follow a word that moved for good, seldom enough that
 * arming it again (two BigInts stored) stays rare when it is right every other time.
 */
const HINT_MISSES = 8;

/**
 * Why a state word that was refused refuses, decoded from that one word (reached only after
 * the refusal, so the admit fast path does no more work). 'queued' only when the counts have
 * room (issue 2: room exists but waiters are ahead); a full bound refuses as it would without
 * waiters, 'requests' before 'units'. `room` is ceiling - cost (0 without units, where the mask
 * is 0): the same checked test as the reservation. Memory ordering: every part of the reason
 * comes from the one word the refusal was decided on, never from a second load, so the reason
 * names a state the word actually held.
 */
function refusalFor32(word: number, requestLimit: number, unitMask: number, room: number): Refusal {
  if (word >= CLOSED_BIT_32) return REFUSED_CLOSED;
  const fields = word & NARROW_FIELD_MASK;
  if (fields >= requestLimit) return REFUSED_REQUESTS;
  if ((fields & unitMask) > room) return REFUSED_UNITS;
  return REFUSED_QUEUED;
}

function refusalFor64(word: bigint, requestLimit: bigint, unitMask: bigint, room: bigint): Refusal {
  if (word >= CLOSED_BIT_64) return REFUSED_CLOSED;
  const fields = word & ~FLAGS_64;
  if (fields >= requestLimit) return REFUSED_REQUESTS;
  if ((fields & unitMask) > room) return REFUSED_UNITS;
  return REFUSED_QUEUED;
}

// attach() hands its buffer to the constructor through this, so the public constructor keeps
// the one-argument signature users see.
let attaching: SharedArrayBuffer | undefined;

/**
 * An exact bound on outstanding requests and, optionally, units, in a SharedArrayBuffer that
 * any thread can attach to.
 *
 * Invariants:
 * - Reservation happens at the check: one compare-exchange on one word both checks and takes
 *   capacity, so at no instant does either counter exceed its bound, under any interleaving.
 *   The word is an Int32 when requests and units fit in 29 bits together, else a BigUint64
 *   (see layout.ts); the choice is made once, from the bounds.
 * - tryAdmit's first compare-exchange expects a word this instance saw, with no load before
 *   it: on the Int32 word the word as it last left it (#guess32), checked as a loaded word
 *   would be; on the 64-bit word a word one of its reservations of the same cost read
 *   (#before64), which passed that cost's checks then. Both are plain fields of this thread's,
 *   never shared. The compare-exchange succeeds only if the shared word is that value, so the
 *   checks held for the real word. A wrong guess costs one failed compare-exchange; a refusal is
 *   decided only on a word read from the shared one (Atomics.load, or a failed
 *   compare-exchange's return: on the 64-bit word the guess's too), so a stale guess never
 *   refuses what has room.
 * - Arithmetic is checked: the unit test is `held <= ceiling - cost` (exact, as cost <=
 *   ceiling), never `held + cost`, which could round above 2^53; request-only mode keeps no
 *   unit accounting at all.
 * - A permit is released exactly once (see Permit, ClaimTable). A refusal is a frozen
 *   constant; counting it (the 64-bit `rejected` word) makes one short-lived BigInt, the
 *   Atomics.add's old value, which V8 allocates though nothing reads it.
 * - `tryAdmit` does not barge: while any instance has waiters it refuses, with 'queued' when the
 *   counts have room for it and 'requests' or 'units' when they do not (see refusalFor32).
 * - Waiters are FIFO per instance; only the head tries, so small requests cannot starve a
 *   large one at the head.
 *
 * Memory ordering: every Atomics operation is sequentially consistent. A release's
 * Atomics.sub happens-before the next admit's successful compare-exchange, so whatever the
 * releasing thread wrote before release() is visible to the next holder. Waking: a waiter
 * increments WAITERS and sets the WAITING flag in the state word, reads SEQ, then tries; a
 * release's Atomics.sub on the same word returns the old word, and if it carried WAITING (or
 * CLOSED) the releaser bumps SEQ and notifies. Both are read-modify-writes of one word, so
 * either the release comes first (the waiter's try sees the room) or it sees the flag and its
 * bump follows the waiter's SEQ read (the wait returns at once or is notified): no wake-up is
 * lost and no waiter spins. Clearing the flag re-checks the count and wakes (see
 * StateFlags.clearWaiting), since a release in that window saw no flag.
 *
 * Waiting needs a running event loop: an instance with queued waiters in a thread whose loop
 * is blocked (a piscina worker with atomics 'sync' between tasks) keeps WAITING set and makes
 * every tryAdmit refuse ('queued' whenever there is room). Use admit() only where the loop runs.
 *
 * Abort safety: an abort or timeout removes the waiter from the queue before rejecting; a
 * waiter that was already admitted has had its listeners removed, so nothing is taken late.
 *
 * Throws: OMNI_ERR_INVALID_BOUND (constructor; a key that is no bound, such as `unit`, is
 * OMNI_ERR_INVALID_ARGUMENT), OMNI_ERR_INVALID_COST (tryAdmit; admit rejects),
 * OMNI_ERR_TOO_LARGE / OMNI_ERR_TIMEOUT / OMNI_ERR_CLOSED / AbortError (admit),
 * OMNI_ERR_PERMIT_RELEASED (releaseClaim of a spent claim), OMNI_ERR_INVALID_CLAIM,
 * OMNI_ERR_INVALID_ARGUMENT (attach of a buffer that is not an admission's; admit options that
 * are not an object, a signal that is not an AbortSignal, a timeoutMs that is not a number >= 0).
 */
export class BoundedAdmission implements PermitOwner {
  readonly #buffer: SharedArrayBuffer;
  readonly #i32: Int32Array;
  readonly #u64: BigUint64Array;
  readonly #requests: number;
  /** -1 in request-only mode. */
  readonly #ceiling: number;
  readonly #unitMode: boolean;
  /** The state word is the 64-bit one (BigInt); otherwise the Int32 one (plain Numbers). */
  readonly #wide: boolean;
  // Narrow word: requests << shift | units. Without units, shift 0 and a zero unit mask, so the
  // unit check never refuses and the same code serves request-only mode. Kept as small
  // integers (<<, never ** or Infinity): V8 then keeps the fields and the arithmetic in int32.
  readonly #one32: number;
  readonly #unitMask32: number;
  readonly #requestLimit32: number;
  readonly #ceiling32: number;
  // Wide word: the same layout in BigInt.
  readonly #shift: bigint;
  readonly #oneRequest: bigint;
  readonly #unitMask: bigint;
  /** Packed words at or above this are full on requests or closed. */
  readonly #requestLimit: bigint;
  readonly #deltas: bigint[] = [];
  /** ceiling - cost per small cost: the most units that may already be held. */
  readonly #rooms: bigint[] = [];
  readonly #flags: StateFlags;
  readonly #claims: ClaimTable;
  readonly #guard: LeakGuard;
  readonly #room: WaitingRoom;
  /**
   * The Int32 word as this instance last left it (its last reservation or release), the
   * expected value of the first compare-exchange. A hint, never shared, never trusted for a
   * refusal: it saves the load before the compare-exchange (~5 ns of a ~30 ns admit/release
   * pair here) whenever no other instance or thread moved the word in between.
   */
  #guess32 = 0;
  /**
   * The 64-bit word's counterpart of #guess32, which tryAdmit tries first for #afterCost: a word
   * a reservation of that cost read (#before64, never flagged), the word it wrote (#after64),
   * and its delta. #before64 passed that cost's checks when it was read, so a compare-exchange
   * from it to #after64 that succeeds reserves what those checks allowed, with no load and no
   * BigInt made (each is an allocation here): an admit/release pair of one cost leaves the word
   * where it found it, and the next pair finds it there. Unlike #guess32 it is not moved by every
   * reservation and release, as each move would store new BigInts (measured: mixed costs lost
   * ~8 ns a pair): it is armed when a cost comes twice in a row and dropped after HINT_MISSES
   * wrong guesses. NaN: none armed (no cost equals it).
   */
  #before64 = 0n;
  #after64 = 0n;
  #afterCost = Number.NaN;
  #afterDelta = 0n;
  /** Wrong guesses since it was armed: at HINT_MISSES it is dropped, to be armed afresh. */
  #misses64 = 0;
  /** The cost of this instance's last reservation on the 64-bit word (-1: none yet). */
  #lastCost64 = -1;

  constructor(bounds: AdmissionBounds) {
    const checked = checkBounds(bounds);
    this.#buffer = attaching ?? createAdmissionBuffer(checked, Math.min(checked.requests, MAX_CLAIM_SLOTS));
    this.#i32 = new Int32Array(this.#buffer, 0, 8);
    this.#u64 = new BigUint64Array(this.#buffer, 0, 8);
    this.#requests = checked.requests;
    this.#unitMode = checked.units !== undefined;
    this.#ceiling = checked.units ?? -1;
    this.#wide = checked.wide;
    const narrowShift = checked.wide ? 0 : checked.unitShift;
    this.#one32 = 1 << narrowShift;
    this.#unitMask32 = this.#one32 - 1;
    this.#requestLimit32 = checked.wide ? 0 : checked.requests << narrowShift;
    this.#ceiling32 = checked.wide ? 0 : (checked.units ?? 0);
    this.#shift = BigInt(checked.unitShift);
    this.#oneRequest = 1n << this.#shift;
    this.#unitMask = this.#oneRequest - 1n;
    this.#requestLimit = BigInt(checked.requests) << this.#shift;
    if (this.#wide) {
      for (let cost = 0; cost < DELTA_CACHE; cost++) {
        this.#deltas.push(this.#oneRequest + BigInt(cost));
        this.#rooms.push(BigInt(Math.max(this.#ceiling - cost, -1)));
      }
    }
    this.#flags = new StateFlags(this.#i32, this.#u64, checked.wide);
    this.#claims = new ClaimTable(this.#buffer, Atomics.load(this.#i32, SLOTS_I32));
    this.#guard = new LeakGuard(
      BoundedAdmission.#leakSink(new WeakRef(this), this.#i32, this.#u64, {
        wide: this.#wide,
        shift: this.#shift,
        one32: this.#one32,
        unitMode: this.#unitMode,
      }),
    );
    this.#room = new WaitingRoom(this.#i32, {
      reserveAsHead: (cost) => this.#reserve(cost, true),
      countRefusal: () => this.#countRefusal(),
      setWaitingFlag: () => this.#flags.setWaiting(),
      clearWaitingFlag: () => this.#flags.clearWaiting(),
      depth: () => this.report().depth,
    });
  }

  /**
   * Attaches to an admission created on another thread (pass its `buffer`). Both instances
   * share every counter; waiters are queued per instance.
   */
  static attach(buffer: SharedArrayBuffer): BoundedAdmission {
    const bounds = attachedBounds(buffer);
    attaching = buffer;
    try {
      // The bounds alone: the checked ones carry their packing too, which no caller may pass.
      return new BoundedAdmission({ requests: bounds.requests, units: bounds.units });
    } finally {
      attaching = undefined;
    }
  }

  /** The shared memory to hand to another thread's `BoundedAdmission.attach`. */
  get buffer(): SharedArrayBuffer {
    return this.#buffer;
  }

  /** True once close() has been called on any attached instance; never reopens. */
  get closed(): boolean {
    return this.#flags.closed;
  }

  /**
   * Reserves one request and `cost` units now, or refuses at once. Refusals are frozen
   * constants (counted in report().rejected). Throws OMNI_ERR_INVALID_COST and changes nothing.
   */
  tryAdmit(cost = 1): Permit | Refusal {
    // The usual case, and the only one V8 needs to inline into the caller: the rest is a call.
    if (
      !this.#wide &&
      isValidCost(cost) &&
      (!this.#unitMode || cost <= this.#ceiling) &&
      !this.#room.waiting
    ) {
      const result = this.#reserveNarrow(cost, false);
      return result.ok ? result : this.#refuse(result);
    }
    return this.#tryAdmitOtherwise(cost);
  }

  /** tryAdmit on the 64-bit word, or with an invalid or too large cost, or waiters queued here. */
  #tryAdmitOtherwise(cost: number): Permit | Refusal {
    // The 64-bit word's hint first (see #before64): a cost it was taken with is valid and fits,
    // and this instance's own waiters come first (see below).
    if (cost === this.#afterCost && !this.#room.waiting) {
      const before = this.#before64;
      const word = Atomics.compareExchange(this.#u64, STATE_U64, before, this.#after64);
      if (word === before) return new Permit(this, cost, this.#afterDelta, this.#guard.enter(cost));
      // A wrong guess: the compare-exchange read the word, so go on from what it read.
      if (++this.#misses64 === HINT_MISSES) this.#afterCost = Number.NaN;
      const result = this.#reserveWide(cost, false, word);
      return result.ok ? result : this.#refuse(result);
    }
    if (!isValidCost(cost)) throw invalidCost(cost);
    let result: Permit | Refusal;
    if (this.#unitMode && cost > this.#ceiling) result = REFUSED_TOO_LARGE;
    // This instance's own waiters come first even while the shared flag is briefly down (see
    // StateFlags.clearWaiting); a plain field read, unlike a shared load of WAITERS (~4 ns here).
    else if (this.#room.waiting) result = this.#refusalWhileQueued(cost);
    else result = this.#reserve(cost, false); // the 64-bit word: tryAdmit takes the Int32 one's
    return result.ok ? result : this.#refuse(result);
  }

  /** Waits in FIFO order for room. See AdmitOptions for abort and timeout. */
  admit(cost = 1, options: AdmitOptions = {}): Promise<Permit> {
    if (!isValidCost(cost)) return Promise.reject(invalidCost(cost));
    if (typeof options !== 'object' || options === null) {
      return Promise.reject(
        new InvalidArgumentError(`admit options must be an object, got ${describeValue(options)}`),
      );
    }
    let signal: AdmitOptions['signal'];
    let timeoutMs: AdmitOptions['timeoutMs'];
    try {
      // Each read once; a getter that throws rejects the call with its error, as Runtime.run's
      // options do, instead of throwing out of admit().
      ({ signal, timeoutMs } = options);
    } catch (err) {
      return Promise.reject(err);
    }
    // Checked only when given: admit(cost) stays the two comparisons it was.
    if (signal !== undefined || timeoutMs !== undefined) {
      const invalid = invalidAdmitOptions(signal, timeoutMs);
      if (invalid !== undefined) return Promise.reject(invalid);
    }
    if (signal !== undefined && signalAborted(signal)) return Promise.reject(abortError(signal));
    if (this.#unitMode && cost > this.#ceiling) {
      this.#countRefusal();
      return Promise.reject(new TooLargeError(cost, this.#ceiling));
    }
    if (!this.#room.waiting) {
      const result = this.#reserve(cost, false);
      if (result.ok) return Promise.resolve(result);
      if (result === REFUSED_CLOSED) {
        this.#countRefusal();
        return Promise.reject(new ClosedError());
      }
    } else if (this.closed) {
      this.#countRefusal();
      return Promise.reject(new ClosedError());
    }
    return this.#room.wait(cost, signal, timeoutMs);
  }

  /**
   * Releases a claim made by Permit.toClaim, from any attached thread. Exactly one copy wins.
   * Throws OMNI_ERR_INVALID_CLAIM for anything that is not a claim of this admission, and
   * OMNI_ERR_PERMIT_RELEASED for one already released (by any copy) or stale.
   */
  releaseClaim(claim: Claim): void {
    // One release decides both errors: checking first and releasing after would read the claim
    // twice, and a claim with a getter could pass the check and release another slot.
    const units = this.#claims.release(claim);
    if (units === NOT_A_CLAIM) throw new InvalidClaimError();
    if (units === SPENT) throw new PermitReleasedError('claim was already released or is stale');
    this.#giveClaimed(units);
  }

  /**
   * Non-throwing release, for the owner recovering a claim whose holder died: true if this call
   * gave the capacity back; false for anything else (spent, stale, another admission's, or not
   * a claim at all), which changes nothing.
   */
  reclaim(claim: Claim): boolean {
    const units = this.#claims.release(claim);
    if (units < 0) return false;
    this.#giveClaimed(units);
    return true;
  }

  #giveClaimed(units: number): void {
    if (this.#wide)
      this.#giveWide(units < DELTA_CACHE ? this.#deltas[units]! : this.#oneRequest + BigInt(units));
    else this.#giveNarrow(this.#one32 + (this.#unitMode ? units : 0));
  }

  /**
   * Refuses new admissions ('closed'; admit rejects OMNI_ERR_CLOSED), wakes every waiter on
   * every thread with that error, and resolves once outstanding reaches zero.
   */
  close(): Promise<void> {
    this.#flags.close();
    this.#wake(); // other instances' waiters and drains must observe the flag
    return this.#room.drain();
  }

  /** The shared counters now (a fresh object each call; see AdmissionReport). */
  report(): AdmissionReport {
    let depth: number;
    let units = 0;
    if (this.#wide) {
      const word = Atomics.load(this.#u64, STATE_U64) & ~FLAGS_64;
      depth = Number(word >> this.#shift);
      units = Number(word & this.#unitMask);
    } else {
      const fields = Atomics.load(this.#i32, STATE_I32) & NARROW_FIELD_MASK;
      depth = Math.floor(fields / this.#one32);
      units = fields & this.#unitMask32;
    }
    return {
      depth,
      capacity: this.#requests,
      rejected: Number(Atomics.load(this.#u64, REJECTED_U64)),
      units,
      unitCapacity: this.#unitMode ? this.#ceiling : null,
      waiting: Atomics.load(this.#i32, WAITERS_I32),
      leaked: Number(Atomics.load(this.#u64, LEAKED_U64)),
    };
  }

  /** @internal Permit.release. */
  [kRelease](_units: number, delta: number | bigint): void {
    // #giveNarrow written out: one call less on the hot path, whose inlining budget is tight.
    if (typeof delta === 'number') {
      const old = Atomics.sub(this.#i32, STATE_I32, delta);
      this.#guess32 = old - delta;
      if (old >= WAITING_BIT_32) this.#wake();
    } else this.#giveWide(delta);
  }

  /**
   * @internal For the owner, once every other thread attached to this admission has stopped
   * and this one holds no plain permit (a Runtime after its threads are gone; it turns each
   * permit into a claim in the turn it is granted): gives back whatever the counts hold beyond
   * the held claims. A claim's release frees its slot and then gives the counts back, separate
   * atomic steps; a thread terminated between them (a forced close) leaves that claim's counts
   * behind, and nothing else would ever give them back. A claim still held is left alone: its
   * owner's reclaim gives it back. Its slot reservation (CLAIMS) may be left behind too; it is
   * not recounted, as an admission closed for good makes no claim again.
   */
  [kRecount](): void {
    const held = this.#claims.held();
    const { depth, units } = this.report();
    const count = depth - held.count;
    if (count <= 0) return;
    const lost = this.#unitMode ? units - held.units : 0;
    if (this.#wide) this.#giveWide((BigInt(count) << this.#shift) + BigInt(lost));
    else this.#giveNarrow(count * this.#one32 + lost);
  }

  /** @internal Permit.toClaim. */
  [kClaim](units: number): Claim {
    return this.#claims.acquire(units);
  }

  /**
   * Checks and takes capacity in one CAS. tryAdmit refuses while the WAITING flag is set; the
   * queue head (`asHead`) reserves past the flag, keeping it in the word it writes back.
   */
  #reserve(cost: number, asHead: boolean): Permit | Refusal {
    return this.#wide ? this.#reserveWide(cost, asHead) : this.#reserveNarrow(cost, asHead);
  }

  #reserveNarrow(cost: number, asHead: boolean): Permit | Refusal {
    const delta = this.#unitMode ? this.#one32 + cost : 1;
    // Checked, not saturating: held <= ceiling - cost (exact: cost <= ceiling was checked).
    // Without units the mask is 0 and room 0, so `0 > 0` never refuses.
    const room = this.#unitMode ? this.#ceiling32 - cost : 0;
    // First try: the word as this instance last left it, with no load (see #guess32). Any flag
    // (WAITING, CLOSED) puts a word above the request limit, so only a plain word gets here.
    const word = this.#guess32;
    if (
      word < this.#requestLimit32 &&
      (word & this.#unitMask32) <= room &&
      Atomics.compareExchange(this.#i32, STATE_I32, word, word + delta) === word
    ) {
      this.#guess32 = word + delta;
      return new Permit(this, cost, delta, this.#guard.enter(cost));
    }
    return this.#reserveNarrowRead(cost, asHead, delta, room);
  }

  /** #reserveNarrow on the word read now: every refusal is decided here, never on a guess. */
  #reserveNarrowRead(cost: number, asHead: boolean, delta: number, room: number): Permit | Refusal {
    const i32 = this.#i32;
    const ignored = asHead ? WAITING_BIT_32 : 0;
    for (let word = Atomics.load(i32, STATE_I32); ; ) {
      const fields = word & ~ignored;
      if (fields >= this.#requestLimit32 || (word & this.#unitMask32) > room) {
        return refusalFor32(fields, this.#requestLimit32, this.#unitMask32, room);
      }
      // The CAS is the reservation: it succeeds only on the exact word that passed the check.
      const seen = Atomics.compareExchange(i32, STATE_I32, word, word + delta);
      if (seen === word) {
        this.#guess32 = word + delta;
        return new Permit(this, cost, delta, this.#guard.enter(cost));
      }
      word = seen; // it read the word: go on from that, as #reserveWide does, not a load again
    }
  }

  /** `read`: the word a compare-exchange that failed just read, instead of a load of it. */
  #reserveWide(cost: number, asHead: boolean, read?: bigint): Permit | Refusal {
    const u64 = this.#u64;
    const cached = cost < DELTA_CACHE;
    const delta = cached ? this.#deltas[cost]! : this.#oneRequest + BigInt(cost);
    // Checked, not saturating: held <= ceiling - cost (exact, cost <= ceiling) instead of
    // held + cost <= ceiling, whose sum could round above 2^53.
    const room = cached ? this.#rooms[cost]! : BigInt(this.#ceiling - cost);
    for (let word = read ?? Atomics.load(u64, STATE_U64); ; ) {
      const fields = asHead ? word & ~WAITING_BIT_64 : word;
      if (fields >= this.#requestLimit) return refusalFor64(fields, this.#requestLimit, this.#unitMask, room);
      if ((word & this.#unitMask) > room) return REFUSED_UNITS;
      // The CAS is the reservation, as in #reserveNarrow: only the exact word that was checked.
      const after = word + delta;
      const seen = Atomics.compareExchange(u64, STATE_U64, word, after);
      if (seen === word) {
        // A guess for a cost asked twice in a row, none armed (storing BigInts costs: mixed
        // costs keep none). Never a flagged word (the queue head's): tryAdmit would pass it.
        if (cost === this.#lastCost64 && cost !== this.#afterCost && fields === word) {
          this.#before64 = word;
          this.#after64 = after;
          this.#afterCost = cost;
          this.#afterDelta = delta;
          this.#misses64 = 0;
        }
        this.#lastCost64 = cost;
        return new Permit(this, cost, delta, this.#guard.enter(cost));
      }
      word = seen;
    }
  }

  /**
   * tryAdmit with this instance's own waiters queued (the shared flag may be briefly down, see
   * StateFlags.clearWaiting): refused whatever the word says; one load of it gives the reason.
   */
  #refusalWhileQueued(cost: number): Refusal {
    if (this.#wide) {
      const room = cost < DELTA_CACHE ? this.#rooms[cost]! : BigInt(this.#ceiling - cost);
      return refusalFor64(Atomics.load(this.#u64, STATE_U64), this.#requestLimit, this.#unitMask, room);
    }
    const room = this.#unitMode ? this.#ceiling32 - cost : 0;
    return refusalFor32(Atomics.load(this.#i32, STATE_I32), this.#requestLimit32, this.#unitMask32, room);
  }

  #refuse(refusal: Refusal): Refusal {
    this.#countRefusal();
    return refusal;
  }

  #countRefusal(): void {
    Atomics.add(this.#u64, REJECTED_U64, 1n);
  }

  // The word a release subtracts from says, through its flags, whether anyone waits on it:
  // waiters (WAITING) or drains (CLOSED). See "Memory ordering".
  #giveNarrow(delta: number): void {
    const old = Atomics.sub(this.#i32, STATE_I32, delta);
    this.#guess32 = old - delta;
    if (old >= WAITING_BIT_32) this.#wake();
  }

  #giveWide(delta: bigint): void {
    if (Atomics.sub(this.#u64, STATE_U64, delta) >= WAITING_BIT_64) this.#wake();
  }

  /**
   * The leak safety net's way back into the counts. It may run after this instance is gone (its
   * dropped permits are collected with it), so it holds the shared words, and this instance only
   * weakly: the registry holds it strongly (see LeakGuard). With the instance gone, so are its
   * waiters and drains (each holds it); other instances' are woken through SEQ. A function of its
   * own: a closure made in the constructor would share the context of the room's, which hold
   * `this`.
   */
  static #leakSink(
    self: WeakRef<BoundedAdmission>,
    i32: Int32Array,
    u64: BigUint64Array,
    { wide, shift, one32, unitMode }: { wide: boolean; shift: bigint; one32: number; unitMode: boolean },
  ): LeakSink {
    return (count, units) => {
      // Counted before the counts drop: whoever finds the room it frees finds it counted leaked.
      Atomics.add(u64, LEAKED_U64, BigInt(count));
      const flagged = wide
        ? Atomics.sub(u64, STATE_U64, (BigInt(count) << shift) + BigInt(units)) >= WAITING_BIT_64
        : Atomics.sub(i32, STATE_I32, count * one32 + (unitMode ? units : 0)) >= WAITING_BIT_32;
      if (!flagged) return;
      const admission = self.deref();
      if (admission !== undefined) admission.#wake();
      else {
        Atomics.add(i32, SEQ_I32, 1); // as #wake does, less a room that went with its instance
        Atomics.notify(i32, SEQ_I32);
      }
    };
  }

  #wake(): void {
    // Bump, then notify: a waiter between its read of SEQ and its wait sees the change.
    Atomics.add(this.#i32, SEQ_I32, 1);
    Atomics.notify(this.#i32, SEQ_I32);
    if (this.#room.interested) this.#room.onChange();
  }
}
