/**
 * unfollowAbort's last follower removes the listener, and the signal's own `constructor` getter,
 * read as it goes, may follow the signal again: the listener is then given back. The getter is
 * read once more as it is, and may throw or abort the signal there; these are the paths the
 * tests of signal-followed-from-its-getter leave out.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { followAbort, unfollowAbort } from '../src/abort-signal.js';
import { scriptedSignal } from './fixtures/scripted-signal.js';

const ok = (): void => {};

describe('the listener given back as the last follower goes', () => {
  // The removal threw after the getter followed: the listener stayed, and is the follower's.
  // Given back anyway, its add threw too, and the set went with it.
  it('a follow made where the removal then throws hears the abort through the listener kept', () => {
    const heard: string[] = [];
    const first = { handleEvent: () => heard.push('first') };
    const { controller, signal, steps, refusal } = scriptedSignal();
    followAbort(signal, first);
    steps.push(
      (s) => {
        steps.unshift(ok); // the follow's own read
        followAbort(s, { handleEvent: () => heard.push('again') });
        throw refusal;
      },
      () => {
        throw refusal;
      },
    );
    unfollowAbort(signal, first);
    steps.splice(0); // the give-back's read, had there been one
    expect(getEventListeners(signal, 'abort')).toHaveLength(1);
    controller.abort();
    expect(heard).toEqual(['again']);
  });

  // The getter aborted the signal as the listener was given back: that abort told nobody.
  it('a signal aborted as the listener is given back is heard on a microtask', async () => {
    const heard: string[] = [];
    const first = { handleEvent: () => heard.push('first') };
    const { controller, signal, steps } = scriptedSignal();
    followAbort(signal, first);
    steps.push(
      (s) => {
        steps.unshift(ok); // the follow's own read
        followAbort(s, { handleEvent: () => heard.push('again') });
      },
      () => controller.abort(),
    );
    unfollowAbort(signal, first);
    expect(signal.aborted).toBe(true);
    await Promise.resolve();
    expect(heard).toEqual(['again']);
  });

  // The listener could not be given back and the getter throws from then on: a set left
  // recorded without it took the next follower silently, which never heard the abort.
  it('a follow after a listener that could not be given back is refused, not lost', () => {
    const heard: string[] = [];
    const first = { handleEvent: () => heard.push('first') };
    const { controller, signal, steps, refusal } = scriptedSignal();
    followAbort(signal, first);
    const refuse = (): void => {
      throw refusal;
    };
    steps.push((s) => {
      steps.unshift(ok); // the follow's own read
      followAbort(s, { handleEvent: () => heard.push('again') });
    }, refuse);
    unfollowAbort(signal, first);
    expect(steps).toHaveLength(0);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    steps.push(refuse);
    expect(() => followAbort(signal, { handleEvent: () => heard.push('next') })).toThrow(refusal);
    controller.abort();
    expect(heard).toEqual([]);
  });
});
