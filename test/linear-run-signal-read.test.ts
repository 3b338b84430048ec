/**
 * Following a call's signal runs the caller's code: Node's addEventListener reads the signal's
 * own `constructor`. LinearRuntime.run measured x before that follow, at the dispatch: x resized
 * or detached by such a getter was sent as it was after, admitted, to fail in the worker or at
 * its post, counted `failed` (a grown x failed too, where a transfer list's getter that grows it
 * has its rows run). The signal is now followed before x is measured.
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
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

/** One 4-wide row, in a length-tracking view over a resizable buffer. */
function oneRow(): { x: Float32Array; buffer: ArrayBuffer } {
  const buffer = new ArrayBuffer(16, { maxByteLength: 64 });
  return { x: new Float32Array(buffer).fill(1), buffer };
}

describe("LinearRuntime.run measures x after the caller's signal has been followed", () => {
  afterEach(closeRuntimes);

  it.each<[string, (buffer: ArrayBuffer) => void]>([
    ['detaches', (buffer) => structuredClone(buffer, { transfer: [buffer] })],
    ['empties', (buffer) => buffer.resize(0)],
  ])(
    'a signal whose follow %s x: OMNI_ERR_INVALID_ARGUMENT, counted invalid, never admitted',
    async (_what, change) => {
      const lr = await start({ inFeatures: 4, outFeatures: 3, admission: { requests: 4, units: 8 } });
      const { x, buffer } = oneRow();
      const err = await rejection(lr.run(x, { signal: signalThat(() => change(buffer)) }));
      expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      const report = lr.report();
      expect([report.invalid, report.failed, report.completed]).toEqual([1, 0, 0]);
    },
  );

  it('a signal whose follow grows x to two rows: the two rows are run', async () => {
    const lr = await start({ inFeatures: 4, outFeatures: 3 });
    const { x, buffer } = oneRow();
    const y = await lr.run(x, { signal: signalThat(() => buffer.resize(32)) });
    expect(y.length).toBe(2 * 3);
    expect([lr.report().failed, lr.report().completed]).toEqual([0, 1]);
  });

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
