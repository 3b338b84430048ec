/**
 * report().waitTimeMs and runTimeMs (and the server's omni_runtime_*_time_ms, read from them)
 * are the calls' latencies. The runtime's own tasks are not calls: start()'s readiness round
 * (whose run time is each thread's module load and init hook, ~100-400 ms here) and close()'s
 * rounds of close hooks. Counted, they showed a runtime that had served nothing with a median
 * run time of hundreds of milliseconds, and kept every later p99 and max above any call's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { LatencySummary } from '../src/index.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, control, gate, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const NONE: LatencySummary = { p50: 0, p99: 0, max: 0 };

describe('report() latency summaries count calls only', () => {
  it('a runtime that has run no call reports no wait or run time (its start is no call)', async () => {
    const rt = await start({ threads: 2 });
    const r = rt.report();
    expect(r.waitTimeMs).toEqual(NONE);
    expect(r.runTimeMs).toEqual(NONE);
  });

  it("after one call, the run-time summary is that call's alone", async () => {
    const rt = await start({ threads: 1 });
    await expect(rt.run({ mode: 'echo', value: 1 })).resolves.toBe(1);
    const { runTimeMs } = rt.report();
    // One sample: its median is its maximum. The start's round would be a second, larger one.
    expect(runTimeMs.max).toBeGreaterThan(0);
    expect(runTimeMs.p50).toBe(runTimeMs.max);
  });

  it('a call that ends while close() waits for it is counted: the summaries are kept only once its reply is in', async () => {
    // The thread gives the call's capacity back before it posts the reply, and close() hears
    // the first (its drain) as soon as the thread does: kept then, the summaries missed the
    // call that close() had waited for. A large value makes the reply's copy the slow part.
    // Bounded repeats: each one alone failed 8 in 10 before.
    const value = 'x'.repeat(4 << 20);
    for (let i = 0; i < 4; i++) {
      const rt = await start({ threads: 1 });
      const c = control();
      const call = rt.run(gate(c, { value }));
      await waitFor(c, STARTED, 1, call); // running: close() must wait for it
      const closed = rt.close();
      open(c);
      expect(await call).toBe(value);
      expect((await closed).clean).toBe(true);
      const { runTimeMs } = rt.report();
      // Its one sample: none (all 0) when it was missed.
      expect(runTimeMs.max).toBeGreaterThan(0);
      expect(runTimeMs.p50).toBe(runTimeMs.max);
    }
  });

  it('close() adds nothing: its rounds of close hooks are no calls', async () => {
    const rt = await start({ threads: 2 });
    await rt.close();
    const r = rt.report();
    expect(r.state).toBe('stopped');
    expect(r.waitTimeMs).toEqual(NONE);
    expect(r.runTimeMs).toEqual(NONE);
  });
});
