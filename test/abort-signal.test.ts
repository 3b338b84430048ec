/**
 * Followers of a caller's AbortSignal (src/abort-signal.ts): calls and waiters share one
 * listener per signal, however many follow it, and each hears the abort once.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { type AbortFollower, followAbort, unfollowAbort } from '../src/abort-signal.js';

function recorder(heard: string[], name: string, also?: () => void): AbortFollower {
  return {
    handleEvent() {
      heard.push(name);
      also?.();
    },
  };
}

describe('followAbort', () => {
  it('adds one listener for every follower, and the last to leave removes it', () => {
    const ac = new AbortController();
    const heard: string[] = [];
    const followers = Array.from({ length: 50 }, (_, i) => recorder(heard, `f${i}`));
    for (const f of followers) followAbort(ac.signal, f);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    for (const f of followers.slice(1)) unfollowAbort(ac.signal, f);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    unfollowAbort(ac.signal, followers[0]!);
    unfollowAbort(ac.signal, followers[0]!); // leaving twice changes nothing
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    ac.abort();
    expect(heard).toEqual([]);
  });

  it('tells each follower once, in the order they came, unless it left before its turn', () => {
    const ac = new AbortController();
    const other = new AbortController();
    const heard: string[] = [];
    const b = recorder(heard, 'b');
    const a = recorder(heard, 'a', () => unfollowAbort(ac.signal, b));
    followAbort(ac.signal, a);
    followAbort(ac.signal, b);
    followAbort(
      ac.signal,
      recorder(heard, 'c', () => unfollowAbort(ac.signal, a)),
    );
    followAbort(other.signal, recorder(heard, 'other'));
    ac.abort();
    ac.signal.dispatchEvent(new Event('abort')); // a second event tells nobody again
    // As listeners of their own: b, removed by a before its turn, is not told.
    expect(heard).toEqual(['a', 'c']);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(other.signal, 'abort')).toHaveLength(1);
  });

  // The last follower left as it was told, and a follow came after it: that follow found the
  // signal aborted and unfollowed, recorded a set of its own and queued its telling, which found
  // none: the end of the first telling had dropped it, so the follow never heard the abort.
  it('a follow made as the abort is told, after the last follower left, is told on a microtask', async () => {
    const ac = new AbortController();
    const heard: string[] = [];
    const late = recorder(heard, 'late');
    const first: AbortFollower = recorder(heard, 'first', () => {
      unfollowAbort(ac.signal, first);
      followAbort(ac.signal, late);
    });
    followAbort(ac.signal, first);
    ac.abort();
    expect(heard).toEqual(['first']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(heard).toEqual(['first', 'late']);
  });

  // A follower that stays after it was told (as one that throws does) leaves the set with the
  // signal: kept, it was found by the next follow, which then neither listened nor queued its
  // telling, and never heard the abort.
  it('a follow after the abort was told is told on a microtask, though a follower stayed', async () => {
    const ac = new AbortController();
    const heard: string[] = [];
    followAbort(ac.signal, recorder(heard, 'stays'));
    ac.abort();
    followAbort(ac.signal, recorder(heard, 'late'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(heard).toEqual(['stays', 'late']);
  });

  it('a follower that throws: the others still hear it, and its error is reported on a later tick', () => {
    const ac = new AbortController();
    const heard: string[] = [];
    const failure = new Error('a follower threw');
    followAbort(ac.signal, {
      handleEvent() {
        throw failure;
      },
    });
    followAbort(ac.signal, recorder(heard, 'after'));
    // The tick it is thrown on is caught here: thrown there, it would fail the test run.
    const later: Array<() => void> = [];
    const nextTick = vi.spyOn(process, 'nextTick').mockImplementation((fn) => {
      later.push(fn as () => void);
    });
    try {
      ac.abort();
    } finally {
      nextTick.mockRestore();
    }
    expect(heard).toEqual(['after']);
    // As EventTarget does for a listener that throws: never swallowed.
    expect(later).toHaveLength(1);
    expect(() => later[0]!()).toThrow(failure);
  });
});
