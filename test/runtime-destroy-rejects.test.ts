/**
 * piscina's destroy() rejecting (it runs the pool's own 'workerDestroy' listeners and settles
 * every call it cuts off, any of which may throw): what start() or close() settles with must not
 * change. A failed start() keeps its coded error, close() resolves, and threadEnds still hears of
 * every exit, then `stopped` once.
 */
import { Piscina } from 'piscina';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { cleanup, codeOf, start, until } from './fixtures/runtime-harness.js';
import { expectEveryThreadThenStopped, recorder, STOPPED } from './fixtures/thread-ends-recorder.js';
import { newIds, recordedIds } from './fixtures/thread-exit-worker.js';

const WORKER = builtModuleUrl('test/fixtures/thread-exit-worker.js');

afterEach(async () => {
  vi.restoreAllMocks();
  await cleanup();
});

/** Every pool's destroy() does its work, then rejects; the warnings it brings are caught. */
function destroyRejects() {
  const real = Piscina.prototype.destroy;
  vi.spyOn(Piscina.prototype, 'destroy').mockImplementation(async function (this: Piscina) {
    await real.call(this);
    throw new Error('destroy failed');
  });
  return vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
}

describe("piscina's destroy() rejects", () => {
  // Before: start() rejected with destroy()'s own error (no code), and `stopped` never came.
  it("a failed start(): rejects with its init's coded error, threadEnds hears every exit, then stopped", async () => {
    const warning = destroyRejects();
    const ids = newIds();
    const { log, ends } = recorder();
    const failed = start({
      worker: WORKER,
      threads: 2,
      threadEnds: ends,
      workerData: { ids: ids.buffer, failAt: 1 },
    });
    expect(await codeOf(failed)).toBe('X_INIT');
    expect(warning).toHaveBeenCalledWith(expect.stringContaining('destroy failed'), 'OmniRuntimeWarning');
    await until(() => log.includes(STOPPED), 'threadEnds to hear stopped');
    expectEveryThreadThenStopped(log, recordedIds(ids));
  });

  // Before: close() rejected with destroy()'s own error, and `stopped` never came.
  it('close(): resolves, threadEnds hears every exit, then stopped', async () => {
    const ids = newIds();
    const { log, ends } = recorder();
    const rt = await start({ worker: WORKER, threads: 2, threadEnds: ends, workerData: { ids: ids.buffer } });
    const warning = destroyRejects();
    expect(await rt.close()).toEqual({ clean: true, abandoned: 0 });
    expect(rt.state).toBe('stopped');
    expect(warning).toHaveBeenCalledWith(expect.stringContaining('destroy failed'), 'OmniRuntimeWarning');
    await until(() => log.includes(STOPPED), 'threadEnds to hear stopped');
    expectEveryThreadThenStopped(log, recordedIds(ids));
  });
});
