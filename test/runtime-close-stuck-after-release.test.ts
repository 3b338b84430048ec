/**
 * A clean close whose wait for a trailing reply lapses: the thread that owes it is stuck after
 * its call's release (its loop blocked before piscina could post the reply). close() cuts that
 * call off; the close hooks' rounds then reach the other threads only, as a forced close's
 * reach the idle ones: a round that counted the stuck thread queued a turn it would never take,
 * so the round waited out startTimeoutMs a second time and ended with a warning that the hooks
 * did not finish. The lapse of the reply's wait is on a fake clock; the rounds run on the real one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  cleanupOnRealClock,
  closePastRepliesWait,
  codeOf,
  runStuckAfterRelease,
  runtimeWarnings,
  start,
} from './fixtures/runtime-harness.js';

afterEach(cleanupOnRealClock);

describe('a clean close whose reply never comes', () => {
  it("runs the other threads' hooks without waiting for the stuck thread's turn", async () => {
    const warnings = runtimeWarnings();
    const rt = await start({ threads: 2, admission: { requests: 1 } });
    const call = codeOf(runStuckAfterRelease(rt, 0));
    expect(await closePastRepliesWait(rt)).toEqual({ clean: false, abandoned: 1 });
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(warnings).toEqual([
      expect.stringContaining('the replies of 1 call(s) whose work had ended did not come'),
    ]);
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, completed: 0, failed: 1 });
  });
});
