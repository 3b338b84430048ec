/**
 * One contending thread of `omni-runtime bench admission`, started as the command starts it,
 * with the round's STOP already set when GO comes: the case of a thread the OS did not run
 * between the two on a busy machine (or in a short round). It still counts one batch, so no
 * round reports 0 pairs/s (which made a figure of 0 and a ratio of 0 or Infinity).
 */
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { BoundedAdmission } from '../src/admission/index.js';
import {
  BATCH,
  BENCH_REQUESTS,
  BENCH_UNITS,
  CONTROL_WORDS,
  type ContenderData,
  type ContentionMode,
  DONE,
  GO,
  READY,
  STOP,
} from '../src/cli/admission-bench-protocol.js';
import { builtModuleUrl } from '../src/paths.js';

describe('a bench admission thread that first runs after STOP', () => {
  it.each([
    ['raw32', 0],
    ['raw64', 3],
    ['admission', 0],
    ['admission', 3],
  ] as const)('%s (cost %i) counts the one batch it did', async (mode: ContentionMode, cost) => {
    const admission = new BoundedAdmission(
      cost === 0 ? { requests: BENCH_REQUESTS } : { requests: BENCH_REQUESTS, units: BENCH_UNITS },
    );
    const data: ContenderData = {
      mode,
      target: mode === 'admission' ? admission.buffer : new SharedArrayBuffer(8),
      control: new SharedArrayBuffer(4 * CONTROL_WORDS),
      results: new SharedArrayBuffer(16),
      index: 0,
      cost,
    };
    const ctl = new Int32Array(data.control);
    const worker = new Worker(new URL(builtModuleUrl('src/cli/admission-bench-worker.js')), {
      workerData: data,
    });
    const exited = once(worker, 'exit');
    // The thread counts itself in and then sleeps on GO.
    const ready = Atomics.waitAsync(ctl, READY, 0);
    if (ready.async) await ready.value;
    expect(Atomics.load(ctl, READY)).toBe(1);
    Atomics.store(ctl, STOP, 1);
    Atomics.store(ctl, GO, 1);
    Atomics.notify(ctl, GO);
    expect(await exited).toEqual([0]);
    expect(Atomics.load(ctl, DONE)).toBe(1);
    const [pairs, refused] = new Float64Array(data.results);
    expect(pairs).toBe(BATCH);
    expect(refused).toBe(0);
    // Every pair it admitted it released: the admission, or the raw word, is back to empty.
    if (mode === 'admission') expect(admission.report()).toMatchObject({ depth: 0 });
    if (mode === 'raw32') expect(new Int32Array(data.target, 0, 1)[0]).toBe(0);
    if (mode === 'raw64') expect(new BigUint64Array(data.target, 0, 1)[0]).toBe(0n);
  });
});
