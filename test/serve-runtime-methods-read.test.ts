/**
 * serve() checks its runtime's run, report and close before it listens; the functions it checked
 * are the ones it calls. Read again per use, a runtime whose method answered a function to the
 * check and anything else later (or whose method a later option's getter replaced) had every
 * POST /v1/linear or GET /health answer 500, or its drain never close the runtime.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { LinearRuntime } from '../src/linear/linear-runtime.js';
import { type Served, serve } from '../src/serve/index.js';
import { get, postFloats } from './fixtures/serve-client.js';
import { closeServed, gatedForTest, servedOf } from './fixtures/serve-harness.js';

afterEach(closeServed);

type Method = 'run' | 'report' | 'close';

/** `lr` as a Served whose `name` answers the runtime's method on its first read, then undefined. */
function methodReadOnce(lr: LinearRuntime, name: Method): { served: Served; reads: () => number } {
  let reads = 0;
  const served = servedOf(lr);
  const method = served[name];
  Object.defineProperty(served, name, { get: () => (reads++ === 0 ? method : undefined) });
  return { served, reads: () => reads };
}

async function gatedRuntime(): Promise<LinearRuntime> {
  const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, open: true });
  return g.lr;
}

describe('the runtime methods serve() checked', () => {
  it('run: the checked one serves every POST', async () => {
    const lr = await gatedRuntime();
    const { served, reads } = methodReadOnce(lr, 'run');
    const s = await serve(served, { port: 0 });
    expect((await postFloats(s.address, [1, 2, 3, 4])).status).toBe(200);
    expect((await postFloats(s.address, [1, 2, 3, 4])).status).toBe(200);
    expect(reads()).toBe(1);
    await s.close();
  });

  it('report: the checked one answers every GET /health', async () => {
    const lr = await gatedRuntime();
    const { served, reads } = methodReadOnce(lr, 'report');
    const s = await serve(served, { port: 0 });
    expect((await get(s.address, '/health')).status).toBe(200);
    expect((await get(s.address, '/health')).status).toBe(200);
    expect(reads()).toBe(1);
    await s.close();
  });

  it('close: the checked one closes the runtime at the drain', async () => {
    const lr = await gatedRuntime();
    const { served, reads } = methodReadOnce(lr, 'close');
    const s = await serve(served, { port: 0 });
    await s.close();
    expect(lr.report().state).toBe('stopped');
    expect(reads()).toBe(1);
  });

  it('run replaced by a later option getter: the checked one serves', async () => {
    const lr = await gatedRuntime();
    const served = servedOf(lr);
    const options = {
      get port(): number {
        (served as { run: unknown }).run = undefined;
        return 0;
      },
    };
    const s = await serve(served, options);
    expect((await postFloats(s.address, [1, 2, 3, 4])).status).toBe(200);
    await s.close();
  });
});
