/**
 * close() keeps the calls' latency summaries as its close hooks begin, once every dispatched
 * call has ended on the main thread: a worker gives a call's capacity back before it posts the
 * reply, so the drain is often heard first, and a summary kept then would miss the last calls.
 */
import { afterEach, expect, it } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import type { RuntimeReport } from '../src/runtime.js';
import { INVOKED, open, waitFor } from './fixtures/runtime-control.js';
import { cleanup, control, start, until } from './fixtures/runtime-harness.js';

const CLOSE_COUNT_WORKER = builtModuleUrl('test/fixtures/close-count-worker.js');

afterEach(cleanup);

it('the last call, whose reply trails the drain, is in the summary close() keeps', async () => {
  // Bounded: each round is one race between the drain and the reply, which the drain often wins.
  // The summaries carry no count: a sample's presence reads as a max above 0 (no bound on it).
  for (let round = 0; round < 8; round++) {
    const rt = await start({ threads: 1 });
    const call = rt.run({ mode: 'echo', value: round });
    const closing = rt.close();
    await expect(call).resolves.toBe(round);
    await closing;
    // The one call's run time is in the kept summary: a summary of no call reads max 0.
    expect(rt.report().runTimeMs.max).toBeGreaterThan(0);
  }
});

it("the close hooks' rounds are no calls: the summaries stay as the calls left them", async () => {
  const closed = control();
  const rt = await start({
    worker: CLOSE_COUNT_WORKER,
    threads: 1,
    workerData: { closed: closed.buffer, closeGate: true },
  });
  await expect(rt.run({ mode: 'echo', value: 1 })).resolves.toBe(1);
  const latency = (r: RuntimeReport) => ({ wait: r.waitTimeMs, run: r.runTimeMs });
  const calls = latency(rt.report());
  const closing = rt.close();
  await waitFor(closed, INVOKED, 1, closing);
  // The hook's round is held past the longest call: piscina times it as a call, a new max.
  const began = performance.now();
  await until(() => performance.now() - began > calls.run.max + 20, 'the hook to outlast the call');
  open(closed);
  await closing;
  expect(latency(rt.report())).toEqual(calls);
});
