import { isProxy } from 'node:util/types';

/**
 * A signal is read by its internal slots, through AbortSignal.prototype's getters and
 * EventTarget.prototype's methods, never through its own properties: those are the caller's,
 * and an own `reason` getter that threw as an abort was told threw out of the abort listener
 * (an uncaught exception) and left the call or waiter pending for good; an own `aborted` that
 * threw made run() and admit() throw instead of rejecting.
 */
const abortedSlot = slotGetter<boolean>('aborted');
const reasonSlot = slotGetter<unknown>('reason');
const addListener = EventTarget.prototype.addEventListener;
const removeListener = EventTarget.prototype.removeEventListener;

function slotGetter<T>(key: string): (this: AbortSignal) => T {
  return Object.getOwnPropertyDescriptor(AbortSignal.prototype, key)!.get as (this: AbortSignal) => T;
}

/**
 * A real AbortSignal. `instanceof` alone admits `Object.create(AbortSignal.prototype)`, whose
 * getters throw (ERR_INVALID_THIS): a later read of `aborted` would then throw where the
 * caller was promised a coded rejection. A Proxy is none: its traps answer the slot getters'
 * reads (they could throw at the abort), and its abort event reaches the signal it wraps, which
 * no follower knows.
 */
export function isAbortSignal(value: unknown): value is AbortSignal {
  try {
    // isProxy first: instanceof asks a Proxy's getPrototypeOf trap, which may throw (revoked too).
    if (isProxy(value) || !(value instanceof AbortSignal)) return false;
    return typeof abortedSlot.call(value) === 'boolean';
  } catch {
    return false;
  }
}

/** `signal.aborted`, read by internal slot. */
export function signalAborted(signal: AbortSignal): boolean {
  return abortedSlot.call(signal);
}

/** `signal.reason`, read by internal slot. */
export function signalReason(signal: AbortSignal): unknown {
  return reasonSlot.call(signal);
}

/** What follows a signal's abort (a call, a waiter): told once, when the signal aborts. */
export interface AbortFollower {
  handleEvent(): void;
}

/**
 * The followers of each signal that has any. Calls share one listener per signal: a listener
 * each would make every add walk the signal's whole list (EventTarget checks for duplicates),
 * quadratic in the calls in flight on one long-lived signal, and past 10 Node warns of a
 * "possible EventTarget memory leak".
 */
const followers = new WeakMap<AbortSignal, Set<AbortFollower>>();

/**
 * The one listener (a function's `this` is the signal): the followers hear the abort in the order
 * they came; as with listeners of their own, one that leaves before its turn is not told.
 */
function tellFollowers(this: AbortSignal): void {
  const following = followers.get(this);
  if (following === undefined) return;
  // Each follower leaves the set as it is told (or before): iteration skips those gone.
  for (const follower of following) {
    try {
      follower.handleEvent();
    } catch (err) {
      // As EventTarget does for a listener that throws: reported, and the others still hear it.
      process.nextTick(() => {
        throw err;
      });
    }
  }
  // Only this set: one recorded meanwhile (its last follower left as it was told, and a follow
  // came after) is told on the microtask that follow queued, as the signal had aborted.
  if (followers.get(this) === following) followers.delete(this);
}

/**
 * `follower` hears `signal`'s abort once, unless unfollowAbort() comes first. Throws, leaving
 * nothing behind, when the signal takes no listener: Node's method reads the signal's own
 * `constructor` (first, before it adds anything), the caller's to make throw. A set recorded
 * before a listener that failed was found by the next follower of that signal, which then never
 * heard its abort. A signal that aborted as it was followed (that getter aborted it) is heard on
 * a microtask: its event came before the listener was added, and told nobody (a call then ran
 * on, a waiter stayed queued).
 */
export function followAbort(signal: AbortSignal, follower: AbortFollower): void {
  let following = followers.get(signal);
  if (following === undefined) {
    addListener.call(signal, 'abort', tellFollowers, { once: true });
    // That getter may have followed this signal itself (a call made from it): its set is kept,
    // not replaced, or its follower never heard the abort.
    following = followers.get(signal);
    if (following === undefined) {
      following = new Set();
      followers.set(signal, following);
    }
    if (abortedSlot.call(signal)) queueMicrotask(tellFollowers.bind(signal));
  }
  following.add(follower);
}

/**
 * Stops `follower` hearing `signal`; the last to go removes the listener. Never throws: it runs
 * as a call or a waiter ends, and a signal whose removal throws (its own `constructor`, as
 * above) threw out of the call's reply, which then never settled. Such a listener stays,
 * finding no followers if it fires; a later follower shares it.
 */
export function unfollowAbort(signal: AbortSignal, follower: AbortFollower): void {
  const following = followers.get(signal);
  if (following === undefined || !following.delete(follower) || following.size !== 0) return;
  // Unrecorded before the listener goes: the removal reads that getter first, which may follow
  // the signal again (a call made from it). That follow finds no set and adds the listener
  // itself, refused as any follow is when the signal takes none (joining this set instead, it
  // was lost when the listener could not be given back). The removal then takes that listener:
  // it is given back, or those followers never hear the abort.
  followers.delete(signal);
  try {
    removeListener.call(signal, 'abort', tellFollowers);
  } catch {
    return; // Left attached (see above), for any follower made meanwhile.
  }
  const current = followers.get(signal);
  if (current === undefined) return;
  try {
    addListener.call(signal, 'abort', tellFollowers, { once: true });
  } catch {
    // That getter throws from then on: no listener takes, and those followers hear nothing. A
    // set it recorded as it was read, with a listener of its own, is left to them.
    if (followers.get(signal) === current) followers.delete(signal);
    return;
  }
  if (abortedSlot.call(signal)) queueMicrotask(tellFollowers.bind(signal));
}
