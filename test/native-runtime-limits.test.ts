/**
 * LinearRuntime's row and shape limits at their edges: MAX_ROWS, the rows a workspace byte limit
 * holds, MAX_FEATURES, and limits that cannot hold one row, refused at start before any thread.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LinearRuntime, type LinearRuntimeOptions, Runtime } from '../src/index.js';
import { MAX_FEATURES, MAX_ROWS, seededFloats } from '../src/native/index.js';
import { closeRuntimes, start } from './fixtures/native-runtime-harness.js';
import { rejection } from './fixtures/runtime-harness.js';

describe('the row limit', () => {
  afterEach(closeRuntimes);

  it('exactly MAX_ROWS rows is served; one more is OMNI_ERR_TOO_LARGE, not an admission refusal', async () => {
    const lr = await start({ threads: 1, inFeatures: 1, outFeatures: 1 });
    const y = await lr.run(new Float32Array(MAX_ROWS));
    expect(y.length).toBe(MAX_ROWS);
    await expect(lr.run(new Float32Array(MAX_ROWS + 1))).rejects.toMatchObject({
      code: 'OMNI_ERR_TOO_LARGE',
    });
    expect(lr.report()).toMatchObject({ completed: 1, refused: 1, rejected: 0 });
  });

  it('with a small workspace byte limit, the most rows it holds is served; one more is refused first', async () => {
    // Each row takes 2 x (16 + 8) floats of scratch, 192 bytes: 1024 bytes hold 5 rows.
    const lr = await start({ threads: 1, inFeatures: 16, outFeatures: 8, workspaceBytes: 1024 });
    expect(lr.maxRows).toBe(5);
    expect((await lr.run(seededFloats(1, 5 * 16))).length).toBe(5 * 8);
    await expect(lr.run(seededFloats(2, 6 * 16))).rejects.toMatchObject({ code: 'OMNI_ERR_TOO_LARGE' });
    expect(lr.report()).toMatchObject({ completed: 1, failed: 0, refused: 1 });
  });

  it('a workspace byte limit that cannot hold one row fails start() before any thread starts', async () => {
    const spawn = vi.spyOn(Runtime, 'start');
    try {
      for (const workspaceBytes of [191, 0, 1.5, Number.NaN]) {
        const err = await rejection(start({ inFeatures: 16, outFeatures: 8, workspaceBytes }));
        expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      }
      expect(spawn).not.toHaveBeenCalled();
    } finally {
      spawn.mockRestore();
    }
  });
});

describe('shape and workspace limits at their edges', () => {
  afterEach(closeRuntimes);

  it('a workspace byte limit of exactly one row serves one row', async () => {
    const lr = await start({ threads: 1, inFeatures: 16, outFeatures: 8, workspaceBytes: 192 });
    expect(lr.maxRows).toBe(1);
    expect(await lr.run(seededFloats(1, 16))).toHaveLength(8);
  });

  it('an invalid device is OMNI_ERR_INVALID_ARGUMENT from start(), on the fixture too', async () => {
    // The fixture has no devices, but the option is still checked.
    for (const device of [-1, 1.5]) {
      expect((await rejection(start({ threads: 1, inFeatures: 4, outFeatures: 2, device }))).code).toBe(
        'OMNI_ERR_INVALID_ARGUMENT',
      );
    }
  });

  it('MAX_FEATURES is accepted as a width', async () => {
    const lr = await start({ threads: 1, inFeatures: MAX_FEATURES, outFeatures: 1 });
    expect(await lr.run(seededFloats(1, MAX_FEATURES))).toHaveLength(1);
  });

  it.each([
    ['inFeatures 0', { inFeatures: 0 }],
    ['outFeatures 0', { outFeatures: 0 }],
    ['inFeatures above MAX_FEATURES', { inFeatures: MAX_FEATURES + 1 }],
  ])('%s: OMNI_ERR_INVALID_ARGUMENT before any thread starts', async (_what, options) => {
    const spawn = vi.spyOn(Runtime, 'start');
    try {
      const err = await rejection(LinearRuntime.start({ backend: 'fixture', ...options }));
      expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(spawn).not.toHaveBeenCalled();
    } finally {
      spawn.mockRestore();
    }
  });

  it('weights that are not an object fail start() with OMNI_ERR_INVALID_ARGUMENT', async () => {
    for (const weights of [null, 7, 'w']) {
      const err = await rejection(
        LinearRuntime.start({ backend: 'fixture', weights } as unknown as LinearRuntimeOptions),
      );
      expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    }
  });
});
