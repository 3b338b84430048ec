/**
 * A close timeout abandons a running call by asking its worker to stop, then reclaiming its
 * claim. A handler that honours ctx.signal may give up on that request and release the claim
 * before the reclaim (another thread; seen 1 in ~500 seeds of runtime-chaos on a loaded
 * machine, OMNI_CHAOS_SEED=1481): its reply then says it was stopped for its caller. The caller
 * set no deadline and never left: it must hear close()'s decision (OMNI_ERR_WORKER_EXITED,
 * counted in `abandoned`), not OMNI_ERR_DEADLINE. The release is placed in that window by
 * holding the stop request until the worker has released (bounded polling of shared state).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CancelWords } from '../src/runtime/cancel-words.js';
import { blockUntilDepth, cleanup, codeOf, start, until } from './fixtures/runtime-harness.js';

afterEach(async () => {
  vi.restoreAllMocks();
  await cleanup();
});

describe("close()'s timeout on a handler that gives up on its stop request", () => {
  it('the caller rejects OMNI_ERR_WORKER_EXITED, and close() counts it abandoned', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1 } });
    const call = codeOf(rt.run({ mode: 'give-up' }));
    await until(() => rt.report().running === 1, 'the call to run');
    const request = CancelWords.prototype.request;
    vi.spyOn(CancelWords.prototype, 'request').mockImplementation(function (this: CancelWords, claim) {
      request.call(this, claim);
      blockUntilDepth(rt, 0);
    });
    const closing = rt.close({ timeoutMs: 0 });
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(await closing).toEqual({ clean: false, abandoned: 1 });
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, failed: 1, deadline: 0 });
  });
});
