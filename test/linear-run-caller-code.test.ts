/**
 * LinearRuntime.run measures x after the last of the caller's code it runs. Two of its reads run
 * such code: the transfer list's (an element's getter) and the signal's follow (Node's
 * addEventListener reads the signal's own `constructor`). x was measured before either, then sent
 * as it was after: resized or detached, it was admitted and failed in the worker or at its post,
 * counted `failed`, having held capacity (a grown x failed too, where it should have its rows
 * run). Measured after both, x is checked as it is sent.
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import type { LinearRunOptions } from '../src/index.js';
import { closeRuntimes, start } from './fixtures/native-runtime-harness.js';
import { rejection } from './fixtures/thrown.js';

/** A live signal whose own `constructor` getter calls `change` as it is followed. */
function signalThat(change: () => void): AbortSignal {
  const signal = new AbortController().signal;
  Object.defineProperty(signal, 'constructor', {
    get(): typeof AbortSignal {
      change();
      return AbortSignal;
    },
  });
  return signal;
}

/** A transfer list whose one element's getter calls `change` as run() reads it. */
function listThat(change: () => void): ArrayBuffer[] {
  const other = new ArrayBuffer(8);
  const list = [other];
  Object.defineProperty(list, 0, {
    enumerable: true,
    get(): ArrayBuffer {
      change();
      return other;
    },
  });
  return list;
}

/** One 4-wide row, in a length-tracking view over a resizable buffer. */
function oneRow(): { x: Float32Array; buffer: ArrayBuffer } {
  const buffer = new ArrayBuffer(16, { maxByteLength: 64 });
  return { x: new Float32Array(buffer).fill(1), buffer };
}

afterEach(closeRuntimes);

describe.each<[string, (change: () => void) => LinearRunOptions]>([
  ['a transfer list whose getter', (change) => ({ transfer: listThat(change) })],
  ['a signal whose follow', (change) => ({ signal: signalThat(change) })],
])('LinearRuntime.run measures x after %s runs', (what, options) => {
  it.each<[string, (buffer: ArrayBuffer) => void]>([
    ['detaches', (buffer) => structuredClone(buffer, { transfer: [buffer] })],
    ['empties', (buffer) => buffer.resize(0)],
  ])(`${what} %s x: OMNI_ERR_INVALID_ARGUMENT, counted invalid, never admitted`, async (_how, change) => {
    const lr = await start({ inFeatures: 4, outFeatures: 3, admission: { requests: 4, units: 8 } });
    const { x, buffer } = oneRow();
    const err = await rejection(
      lr.run(
        x,
        options(() => change(buffer)),
      ),
    );
    expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    const report = lr.report();
    expect([report.invalid, report.failed, report.completed]).toEqual([1, 0, 0]);
  });

  it(`${what} grows x to two rows: the two rows are run`, async () => {
    const lr = await start({ inFeatures: 4, outFeatures: 3 });
    const { x, buffer } = oneRow();
    const y = await lr.run(
      x,
      options(() => buffer.resize(32)),
    );
    expect(y.length).toBe(2 * 3);
    expect([lr.report().failed, lr.report().completed]).toEqual([0, 1]);
  });
});

describe("LinearRuntime.run's own follow of the signal", () => {
  it('a signal that takes no listener: its error, counted invalid before admission, nothing held', async () => {
    // Followed first at the dispatch, it was counted failed (the call had been admitted).
    const lr = await start({ inFeatures: 4, outFeatures: 3, admission: { requests: 1, units: 4 } });
    const refusal = new Error('no listener');
    const signal = signalThat(() => {
      throw refusal;
    });
    expect(await rejection(lr.run(oneRow().x, { signal }))).toBe(refusal);
    const report = lr.report();
    expect([report.invalid, report.failed, report.depth, report.units]).toEqual([1, 0, 0, 0]);
    await expect(lr.run(oneRow().x)).resolves.toHaveLength(3);
  });

  it('the signal still aborts the call, and is let go of once the call ends', async () => {
    const lr = await start({ inFeatures: 4, outFeatures: 3 });
    const controller = new AbortController();
    controller.abort();
    const { x } = oneRow();
    expect((await rejection(lr.run(x, { signal: controller.signal }))).code).toBe('OMNI_ERR_ABORTED');
    const live = new AbortController();
    await expect(lr.run(oneRow().x, { signal: live.signal })).resolves.toHaveLength(3);
    expect(getEventListeners(live.signal, 'abort')).toHaveLength(0);
  });
});
