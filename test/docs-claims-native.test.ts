/**
 * Claims of docs/limits.md and docs/native.md about the native layer that no other test pins, one
 * `it` each, the page's words in its name.
 */
import { describe, expect, it } from 'vitest';
import { cudaArgs } from '../scripts/build-native.mjs';
import { loadNativeLibrary, NativeContext, seededWeights } from '../src/index.js';
import { fixtureLibrary } from './fixtures/native-fixture-library.js';

describe('docs/limits.md: Native', () => {
  it('"workspaces are cached per context (workspaceCount 4 ... by default ...)"', () => {
    const context = NativeContext.open(loadNativeLibrary('fixture'));
    try {
      const { w, b } = seededWeights(1, 1);
      context.uploadWeights(w, b, 1, 1);
      // Five calls, each needing a larger workspace than any cached: the fifth evicts one.
      for (const rows of [1, 2, 4, 8, 16]) context.linearGelu(new Float32Array(rows), rows);
      expect(context.stats()).toMatchObject({ cachedWorkspaces: 4, workspaceEvictions: 1 });
    } finally {
      context.close();
    }
  });

  it('"It carries sm_80 and sm_90 code and compute_90 PTX that newer GPUs compile at load"', () => {
    const args = cudaArgs('out.so');
    const targets = args.filter((_, i) => args[i - 1] === '-gencode');
    expect(targets).toEqual(['arch=compute_80,code=sm_80', 'arch=compute_90,code=[sm_90,compute_90]']);
    // No other way to name a target: -arch or --gpu-architecture would add to (or replace) these.
    expect(args.filter((arg) => /^-(arch|code|-gpu-architecture|-gpu-code)\b/.test(arg))).toEqual([]);
  });

  describe('a NativeContext dropped without close()', () => {
    const fixture = fixtureLibrary();

    it('"one dropped without it is not freed when it is collected": its bytes stay held', async () => {
      const before = fixture.faults.liveBytes();
      const dropped = (() => {
        const context = NativeContext.open(fixture.lib);
        const { w, b } = seededWeights(64, 64);
        context.uploadWeights(w, b, 64, 64);
        context.linearGelu(new Float32Array(64), 1);
        return new WeakRef(context);
      })();
      const held = fixture.faults.liveBytes() - before;
      expect(held).toBeGreaterThan(0);
      // A WeakRef's target lives until the turn that made it ends, and a finalizer (were there
      // one) runs in a task after the collection: collect across turns, then give it some more.
      for (let turn = 0; turn < 10; turn++) {
        await new Promise((resolve) => setTimeout(resolve, 0));
        (globalThis as { gc?: () => void }).gc?.();
      }
      expect(dropped.deref()).toBeUndefined();
      expect(fixture.faults.liveBytes() - before).toBe(held);
    });
  });
});
