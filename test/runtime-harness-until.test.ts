/**
 * The harness's until() bounds a hang by the time it spent polling, not by wall time: a process
 * frozen while it polls (a stalled machine; the thread it waits for stood still too) must not
 * spend the limit. The freeze is the clock moving on between two polls.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { until } from './fixtures/runtime-harness.js';

const realNow = Date.now;
afterEach(() => {
  Date.now = realNow;
});

/** A predicate that holds from its `polls`-th call on; its first call moves the clock `frozenMs`. */
function heldAfter(polls: number, frozenMs: number): () => boolean {
  let calls = 0;
  return () => {
    if (++calls === 1) Date.now = () => realNow() + frozenMs;
    return calls >= polls;
  };
}

describe('until()', () => {
  it('a freeze longer than its limit, while it polls, does not time it out', async () => {
    await expect(until(heldAfter(3, 30_000), 'the condition', 20_000)).resolves.toBeUndefined();
  });

  it('still gives up on a condition that never holds', async () => {
    await expect(until(() => false, 'a condition that never holds', 50)).rejects.toBeInstanceOf(Error);
  });
});
