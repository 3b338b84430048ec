/**
 * close() keeps the calls' latency summaries as its close hooks begin, once every dispatched
 * call has ended on the main thread: a worker gives a call's capacity back before it posts the
 * reply, so the drain is often heard first, and a summary kept then would miss the last calls.
 */
import { afterEach, expect, it } from 'vitest';
import { cleanup, start } from './fixtures/runtime-harness.js';

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
