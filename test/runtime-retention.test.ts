/**
 * What a closed runtime leaves behind: nothing that keeps it reachable. A server that closes a
 * runtime (a reload, a test suite) must get its shared buffers (the claim window of the serial
 * scheduler alone is over 1 MiB) and threads' bookkeeping back once it drops the runtime.
 * vitest.config.ts starts the test processes with --expose-gc.
 */
import { describe, expect, it } from 'vitest';
import { LinearRuntime, Runtime, type RuntimeOptions } from '../src/index.js';
import { serve } from '../src/serve/index.js';
import { newControl, open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { GATED_WORKER, gate } from './fixtures/runtime-harness.js';
import { postFloats } from './fixtures/serve-client.js';
import { startGated } from './fixtures/serve-harness.js';

const gc = (globalThis as { gc?: () => void }).gc;
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Resolves once what `make` registers is collected; fails after `tries` collections. A
 * FinalizationRegistry, not a WeakRef: deref() would keep its target alive to the end of the job.
 */
async function collectedAfter(make: (register: (target: object) => void) => Promise<void>, tries = 50) {
  if (!gc) throw new Error('global.gc is missing: run with --expose-gc (see vitest.config.ts)');
  let collected = false;
  const registry = new FinalizationRegistry(() => {
    collected = true;
  });
  await make((target) => registry.register(target, 0));
  for (let i = 0; i < tries && !collected; i++) {
    gc();
    await turn();
  }
  return collected;
}

describe('a closed runtime', () => {
  // piscina's pool.close() arms a 30 s timer it never clears (its own close timeout); the pool's
  // event listeners hold the runtime, so every runtime closed cleanly stayed reachable, with its
  // buffers, for 30 s after its close() resolved.
  it.each([
    ['serial', undefined],
    ['bounded', { requests: 2 }],
    ['wait mode', { requests: 2, wait: true }],
  ] as const)('%s: can be collected once dropped', async (_mode, admission) => {
    const options: RuntimeOptions = { worker: GATED_WORKER, threads: 2, ...(admission ? { admission } : {}) };
    const collected = await collectedAfter(async (register) => {
      const rt = await Runtime.start(options);
      const ac = new AbortController();
      await expect(
        rt.run({ mode: 'echo', value: 1 }, { signal: ac.signal, deadlineMs: 60_000 }),
      ).resolves.toBe(1);
      await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
      register(rt);
    });
    expect(collected).toBe(true);
  });

  it('a LinearRuntime and its runtime behind a drained server can be collected', async () => {
    const collected = await collectedAfter(async (register) => {
      const gated = await startGated({ open: true });
      const handle = await serve(gated.lr, { port: 0 });
      const answer = await postFloats(handle.address, new Float32Array(4));
      expect(answer.status).toBe(200);
      await expect(handle.close()).resolves.toEqual({ clean: true, abandonedRequests: 0 });
      register(gated.lr.runtime);
    });
    expect(collected).toBe(true);
  });

  it('one closed by its timeout, its idle thread given its close hook, can be collected', async () => {
    const stuck = newControl();
    try {
      const collected = await collectedAfter(async (register) => {
        const rt = await Runtime.start({ worker: GATED_WORKER, threads: 2, admission: { requests: 2 } });
        const call = rt.run(gate(stuck, { sync: true })).catch(() => {});
        await waitFor(stuck, STARTED);
        await expect(rt.close({ timeoutMs: 0 })).resolves.toEqual({ clean: false, abandoned: 1 });
        await call;
        register(rt);
      });
      expect(collected).toBe(true);
    } finally {
      open(stuck);
    }
  });

  it('a LinearRuntime on the native worker can be collected', async () => {
    const collected = await collectedAfter(async (register) => {
      const lr = await LinearRuntime.start({ threads: 1, inFeatures: 4, outFeatures: 4, backend: 'fixture' });
      await expect(lr.run(new Float32Array(4))).resolves.toHaveLength(4);
      await lr.close();
      register(lr.runtime);
    });
    expect(collected).toBe(true);
  });
});

describe('a runtime still open', () => {
  // The set of calls a close timeout would abandon must let go of each call once its work ends:
  // a long-lived runtime would otherwise keep every call it ever ran (and what each holds).
  it('keeps nothing of a call that has ended', async () => {
    const rt = await Runtime.start({ worker: GATED_WORKER, threads: 1, admission: { requests: 2 } });
    try {
      const collected = await collectedAfter(async (register) => {
        // The call holds its signal until the call itself is dropped.
        const ac = new AbortController();
        await expect(rt.run({ mode: 'echo', value: 1 }, { signal: ac.signal })).resolves.toBe(1);
        register(ac.signal);
      });
      expect(collected).toBe(true);
    } finally {
      await rt.close();
    }
  });
});
