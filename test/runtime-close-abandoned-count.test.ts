/**
 * close()'s `abandoned` counts the calls its timeout cut off, as their callers saw it: a call
 * whose worker releases its claim after the timeout fired but before the calls are abandoned is
 * answered with its result (abandon() leaves it to its reply), so it is no abandoned call. The
 * release is placed in that window by holding close() in the pool guard's teardown, which runs
 * between the two, until the worker has released (bounded polling of shared state).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PoolGuard } from '../src/runtime/pool-guard.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { blockUntilDepth, cleanup, control, gate, start } from './fixtures/runtime-harness.js';

afterEach(async () => {
  vi.restoreAllMocks();
  await cleanup();
});

describe("close()'s abandoned count", () => {
  // The count was the admission's depth, read as the timeout fired, before the calls were
  // abandoned: { clean: false, abandoned: 1 } while the only call resolved with its result.
  it('leaves out a call released between the timeout and the abandoning', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1 } });
    const held = control();
    const call = rt.run(gate(held, { sync: true, value: 'done' }));
    await waitFor(held, STARTED, 1, call);
    const tearDown = PoolGuard.prototype.tearDown;
    vi.spyOn(PoolGuard.prototype, 'tearDown').mockImplementation(function (this: PoolGuard) {
      open(held);
      blockUntilDepth(rt, 0);
      tearDown.call(this);
    });
    const closing = rt.close({ timeoutMs: 0 });
    await expect(call).resolves.toBe('done');
    expect(await closing).toEqual({ clean: false, abandoned: 0 });
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, completed: 1, failed: 0 });
  });
});
