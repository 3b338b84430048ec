/**
 * Random sequences of weight uploads, calls and injected native faults on NativeContexts over
 * the fixture library: every answer exact, the workspace cache within its bounds, and the
 * fixture's live bytes back where they were once the contexts close. A fixed seed and run count
 * (NATIVE_FUZZ_SEED, NATIVE_FUZZ_RUNS) make a failure reproducible.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NativeContext, NativeStatus, seededFloats } from '../src/native/index.js';
import { fixtureLibrary } from './fixtures/native-fixture-library.js';
import { RUNS, SEED } from './fixtures/native-fuzz-inputs.js';
import { thrownCode } from './fixtures/thrown.js';

describe('native context sequences (fixture)', () => {
  const fixture = fixtureLibrary();

  it('uploads, calls and injected faults in any order: exact answers, cache within bounds, nothing leaked', () => {
    const SHAPES: Array<[number, number]> = [
      [3, 5],
      [17, 2],
      [40, 33],
    ];
    const op = fc.oneof(
      fc.record({ kind: fc.constant('upload' as const), shape: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ kind: fc.constant('call' as const), rows: fc.integer({ min: 1, max: 90 }) }),
      fc.record({
        kind: fc.constantFrom('alloc' as const, 'copy' as const, 'sync' as const),
        rows: fc.integer({ min: 1, max: 90 }),
        nth: fc.integer({ min: 1, max: 4 }),
      }),
    );
    const setup = fc.record({
      workspaceCount: fc.integer({ min: 1, max: 5 }),
      workspaceBytes: fc.integer({ min: 200, max: 60_000 }),
      ops: fc.array(op, { minLength: 1, maxLength: 25 }),
      seed: fc.integer({ min: 0, max: 2 ** 31 }),
    });
    const fresh = new Map<string, NativeContext>();
    // The reference contexts grow their own caches as they go: left out of the live-byte count.
    const freshBytes = (): number => [...fresh.values()].reduce((sum, c) => sum + c.stats().liveBytes, 0);
    const answer = (shape: number, x: Float32Array, rows: number): Float32Array => {
      const [inF, outF] = SHAPES[shape]!;
      let ctx = fresh.get(`${shape}`);
      if (ctx === undefined) {
        ctx = NativeContext.open(fixture.lib);
        ctx.uploadWeights(
          seededFloats(shape + 100, inF * outF, 0.4),
          seededFloats(shape + 200, outF),
          outF,
          inF,
        );
        fresh.set(`${shape}`, ctx);
      }
      return ctx.linearGelu(x, rows);
    };
    try {
      answer(0, seededFloats(1, SHAPES[0]![0]), 1); // opened outside the baseline below
      answer(1, seededFloats(1, SHAPES[1]![0]), 1);
      answer(2, seededFloats(1, SHAPES[2]![0]), 1);
      fc.assert(
        fc.property(setup, (s) => {
          const baseline = fixture.faults.liveBytes() - freshBytes();
          const ctx = NativeContext.open(fixture.lib, {
            workspaceCount: s.workspaceCount,
            workspaceBytes: s.workspaceBytes,
          });
          let shape = -1;
          let n = 0;
          try {
            for (const o of s.ops) {
              if (o.kind === 'upload') {
                const [inF, outF] = SHAPES[o.shape]!;
                ctx.uploadWeights(
                  seededFloats(o.shape + 100, inF * outF, 0.4),
                  seededFloats(o.shape + 200, outF),
                  outF,
                  inF,
                );
                shape = o.shape;
                continue;
              }
              if (shape < 0) {
                expect(thrownCode(() => ctx.linearGelu(seededFloats(1, 1), 1))).toBe('OMNI_ERR_NATIVE');
                continue;
              }
              const [inF, outF] = SHAPES[shape]!;
              const x = seededFloats(s.seed + n++, o.rows * inF, 3);
              if (o.kind === 'alloc') fixture.faults.failAllocAfter(o.nth);
              if (o.kind === 'copy') fixture.faults.failCopyAfter(ctx, o.nth);
              if (o.kind === 'sync') fixture.faults.failSyncAfter(ctx, o.nth);
              let got: Float32Array | undefined;
              let err: { code?: string; nativeCode?: number; fatal?: boolean } | undefined;
              try {
                got = ctx.linearGelu(x, o.rows);
              } catch (e) {
                err = e as typeof err;
              }
              fixture.faults.failAllocAfter(0);
              fixture.faults.failCopyAfter(ctx, 0);
              fixture.faults.failSyncAfter(ctx, 0);
              const limit = 8 * o.rows * (inF + outF) > s.workspaceBytes;
              if (limit) {
                expect(err).toMatchObject({
                  code: 'OMNI_ERR_NATIVE',
                  nativeCode: NativeStatus.WORKSPACE_LIMIT,
                });
              } else if (err !== undefined) {
                // Only an armed fault may fail a call that fits.
                const want = {
                  alloc: NativeStatus.OUT_OF_MEMORY,
                  copy: NativeStatus.COPY_FAILED,
                  sync: NativeStatus.DEVICE,
                  call: undefined,
                }[o.kind];
                expect(o.kind).not.toBe('call');
                // A call syncs once more when it evicts first: at most two syncs.
                if (o.kind === 'sync') expect(o.nth).toBeLessThanOrEqual(2);
                expect(err).toMatchObject({ code: 'OMNI_ERR_NATIVE', nativeCode: want, fatal: false });
              } else {
                expect(o.kind === 'copy' && o.nth <= 2).toBe(false);
                // Every call that fits syncs at least once, at its end.
                expect(o.kind === 'sync' && o.nth === 1).toBe(false);
                expect(got).toEqual(answer(shape, x, o.rows));
              }
              const stats = ctx.stats();
              expect(stats.cachedWorkspaces).toBeLessThanOrEqual(s.workspaceCount);
              expect(stats.workspaceBytes).toBeLessThanOrEqual(s.workspaceBytes);
            }
          } finally {
            fixture.faults.failAllocAfter(0);
            ctx.close();
          }
          expect(fixture.faults.liveBytes() - freshBytes()).toBe(baseline);
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
    } finally {
      for (const ctx of fresh.values()) ctx.close();
    }
  });
});
