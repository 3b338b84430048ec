/**
 * A close timeout given after the drain ended cuts short the wait for trailing replies
 * (runtime-close-later-timeout-replies), even when it comes on the very turn the drain ended:
 * the last call ended on this thread (its thread died, its claim reclaimed here) and its
 * caller's handler asks for the end at once, before close() has resumed from the drain. That
 * timeout was disarmed as close() resumed, as one given before the drain is, and the wait went
 * on for startTimeoutMs (here for good).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { CloseResult } from '../src/index.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import {
  cleanup,
  control,
  runStuckAfterRelease,
  runtimeWarnings,
  start,
  until,
} from './fixtures/runtime-harness.js';

afterEach(cleanup);

describe('a close timeout given on the turn the drain ended', () => {
  it("cuts the wait for another call's trailing reply", async () => {
    const warnings = runtimeWarnings();
    const rt = await start({ threads: 2, admission: { requests: 2 }, startTimeoutMs: Infinity });
    const dying = control();
    let secondClose: Promise<CloseResult> | undefined;
    // Its thread exits: the claim comes back here (the task's failure), which ends the drain,
    // and then its caller hears of it, on the same turn.
    const dyingCall = rt.run({ mode: 'block-exit', control: dying.buffer });
    const last = dyingCall.catch((err: { code?: string }) => {
      secondClose = rt.close({ timeoutMs: 0 });
      return err.code;
    });
    await waitFor(dying, STARTED, 1, dyingCall);
    // Settled either way: on the old code it resolves once cleanup() lets its thread go.
    const call = runStuckAfterRelease(rt, 1).then(
      () => 'resolved',
      (err: { code?: string }) => err.code,
    );
    let result: CloseResult | undefined;
    const closing = rt.close();
    void closing.then((r) => {
      result = r;
    });
    open(dying);
    expect(await last).toBe('OMNI_ERR_WORKER_EXITED');
    expect(secondClose).toBe(closing);
    await until(() => result !== undefined, 'close() to end');
    expect(result).toEqual({ clean: false, abandoned: 1 });
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(warnings).toEqual([]);
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, completed: 0, failed: 2 });
  });
});
