/**
 * LinearRuntime.run reads the caller's transfer list before it measures x: reading the list may
 * run the caller's code (an element's getter), and x resized or detached by it was measured
 * before, then sent as it was after: admitted, it failed in the worker or at its post, counted
 * `failed`, having held capacity. Measured after, x is checked as it is sent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { closeRuntimes, start } from './fixtures/native-runtime-harness.js';
import { rejection } from './fixtures/thrown.js';

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

describe("LinearRuntime.run measures x after the caller's transfer list has been read", () => {
  afterEach(closeRuntimes);

  it.each<[string, (buffer: ArrayBuffer) => void]>([
    ['detaches', (buffer) => structuredClone(buffer, { transfer: [buffer] })],
    ['empties', (buffer) => buffer.resize(0)],
  ])(
    'a list whose getter %s x: OMNI_ERR_INVALID_ARGUMENT, counted invalid, never admitted',
    async (_what, change) => {
      const lr = await start({ inFeatures: 4, outFeatures: 3, admission: { requests: 4, units: 8 } });
      const { x, buffer } = oneRow();
      const err = await rejection(lr.run(x, { transfer: listThat(() => change(buffer)) }));
      expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      const report = lr.report();
      expect([report.invalid, report.failed, report.completed]).toEqual([1, 0, 0]);
    },
  );

  it('a list whose getter grows x to two rows: the two rows are run', async () => {
    const lr = await start({ inFeatures: 4, outFeatures: 3 });
    const { x, buffer } = oneRow();
    const y = await lr.run(x, { transfer: listThat(() => buffer.resize(32)) });
    expect(y.length).toBe(2 * 3);
    expect([lr.report().failed, lr.report().completed]).toEqual([0, 1]);
  });
});
