/**
 * LinearRuntime[kRowsRefusal]: what the HTTP route asks of a rows hint before it reads a body.
 * It must refuse exactly what run() would refuse for that count, and leave a runtime that is not
 * ready to run(), which answers every call OMNI_ERR_UNAVAILABLE.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { LinearRuntime } from '../src/index.js';
import { kRowsRefusal } from '../src/linear/linear-runtime.js';
import { closeRuntimes, runtimes } from './fixtures/native-runtime-harness.js';
import { rejection } from './fixtures/runtime-harness.js';

afterEach(closeRuntimes);

async function started(): Promise<LinearRuntime> {
  const lr = await LinearRuntime.start({ backend: 'fixture', inFeatures: 4, outFeatures: 2 });
  runtimes.push(lr);
  return lr;
}

describe('LinearRuntime[kRowsRefusal]', () => {
  it('refuses more rows than one call takes, not maxRows itself (which run() serves)', async () => {
    const lr = await started();
    expect(lr[kRowsRefusal](lr.maxRows)).toBeUndefined();
    const refuse = lr[kRowsRefusal](lr.maxRows + 1);
    expect(refuse).toBeDefined();
    expect((await rejection(refuse!())).code).toBe('OMNI_ERR_TOO_LARGE');
    expect(lr.report().refused).toBe(1);
  });

  // Mutant: `rows >= ceiling` (linear-runtime.ts): a hint of exactly the unit ceiling, which
  // run() admits at its default cost, was refused as too large.
  it('refuses more rows than the unit ceiling, not the ceiling itself (which run() admits)', async () => {
    const lr = await LinearRuntime.start({
      backend: 'fixture',
      inFeatures: 4,
      outFeatures: 2,
      admission: { requests: 4, units: 8 },
    });
    runtimes.push(lr);
    expect(lr[kRowsRefusal](8)).toBeUndefined();
    expect(await lr.run(new Float32Array(8 * 4))).toHaveLength(8 * 2);
    const refuse = lr[kRowsRefusal](9);
    expect(refuse).toBeDefined();
    expect((await rejection(refuse!())).code).toBe('OMNI_ERR_TOO_LARGE');
    expect(lr.report().refused).toBe(1);
  });

  it('leaves a runtime that is not ready to run()', async () => {
    const lr = await started();
    await lr.close();
    // Refused here, it was a 413 too-large (and counted a refusal) where run() says unavailable.
    expect(lr[kRowsRefusal](lr.maxRows + 1)).toBeUndefined();
  });
});
