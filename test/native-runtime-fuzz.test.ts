/**
 * Randomized use of LinearRuntime over the fixture library: malformed weights and shapes at
 * start, and random calls (some illegal, aborted, past their deadline, transferred or with
 * injected faults) under each scheduler; legal calls give the direct call's answer, illegal ones
 * a coded error, and nothing leaks. A fixed seed and run count (NATIVE_FUZZ_SEED,
 * NATIVE_FUZZ_RUNS) make a failure reproducible.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import { LinearRuntime, type LinearWeights, Runtime, seededWeights } from '../src/index.js';
import {
  FixtureFaults,
  loadNativeLibrary,
  MAX_FEATURES,
  NativeContext,
  NativeStatus,
  seededFloats,
} from '../src/native/index.js';
import { firstMismatch, floatsWith, place, placement, RUNS, SEED } from './fixtures/native-fuzz-inputs.js';
import { until } from './fixtures/runtime-harness.js';

describe('LinearRuntime fuzz (fixture)', () => {
  let faults: FixtureFaults;
  const runtimes: LinearRuntime[] = [];
  beforeAll(() => {
    buildFixture();
    faults = new FixtureFaults(loadNativeLibrary('fixture'));
  });
  afterAll(async () => {
    await Promise.all(runtimes.map((lr) => lr.close({ timeoutMs: 10_000 })));
  });

  it('malformed weights or shapes at start: OMNI_ERR_INVALID_ARGUMENT before any thread starts', async () => {
    type WeightFlaw =
      | 'w-short'
      | 'w-long'
      | 'b-short'
      | 'b-long'
      | 'w-f64'
      | 'b-f64'
      | 'w-array'
      | 'b-array'
      | 'w-detached'
      | 'b-detached'
      | 'in-other'
      | 'in-fraction'
      | 'in-zero'
      | 'in-huge'
      | 'said-disagrees';
    const spawn = vi.spyOn(Runtime, 'start');
    const flawed = fc.record({
      inF: fc.integer({ min: 1, max: 8 }),
      outF: fc.integer({ min: 1, max: 8 }),
      // One flaw at a time (two could cancel out: a wider stated width and a longer w), on weights
      // that are otherwise right (a shared view with an offset included).
      flaws: fc.tuple(
        fc.constantFrom<WeightFlaw>(
          'w-short',
          'w-long',
          'b-short',
          'b-long',
          'w-f64',
          'b-f64',
          'w-array',
          'b-array',
          'w-detached',
          'b-detached',
          'in-other',
          'in-fraction',
          'in-zero',
          'in-huge',
          'said-disagrees',
        ),
      ),
      shared: fc.boolean(),
    });
    const make = (which: 'w' | 'b', length: number, flaws: WeightFlaw[], shared: boolean): unknown => {
      const n =
        length + (flaws.includes(`${which}-short`) ? -1 : 0) + (flaws.includes(`${which}-long`) ? 1 : 0);
      const values = place(seededFloats(n + 7, n), shared ? 'shared-offset' : 'plain', 3);
      if (flaws.includes(`${which}-f64`)) return Float64Array.from(values);
      if (flaws.includes(`${which}-array`)) return Array.from(values);
      if (flaws.includes(`${which}-detached`)) {
        const own = values.slice();
        structuredClone(own.buffer, { transfer: [own.buffer as ArrayBuffer] });
        return own;
      }
      return values;
    };
    try {
      await fc.assert(
        fc.asyncProperty(flawed, async ({ inF, outF, flaws, shared }) => {
          const has = (flaw: WeightFlaw): boolean => flaws.includes(flaw);
          const inFeatures = has('in-zero')
            ? 0
            : has('in-huge')
              ? MAX_FEATURES + 1
              : has('in-fraction')
                ? inF + 0.5
                : has('in-other')
                  ? inF + 1
                  : inF;
          const weights = {
            w: make('w', inF * outF, flaws, shared),
            b: make('b', outF, flaws, shared),
            inFeatures,
            outFeatures: outF,
          } as unknown as LinearWeights;
          let code: string | undefined;
          try {
            await LinearRuntime.start({
              backend: 'fixture',
              threads: 1,
              weights,
              ...(has('said-disagrees') ? { outFeatures: outF + 1 } : {}),
            });
            code = 'started';
          } catch (err) {
            code = (err as { code?: string }).code;
          }
          expect({ flaws, code }).toEqual({ flaws, code: 'OMNI_ERR_INVALID_ARGUMENT' });
          expect(spawn).not.toHaveBeenCalled();
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
    } finally {
      spawn.mockRestore();
    }
  });

  type Flaw =
    | 'none'
    | 'extra'
    | 'rows-mismatch'
    | 'float64'
    | 'array'
    | 'detached'
    | 'abort-before'
    | 'abort-after'
    | 'deadline'
    | 'transfer'
    | 'transfer-then-detach'
    | 'transfer-twice'
    | 'inject-copy'
    | 'inject-alloc'
    | 'inject-sync';
  const FLAWS: Flaw[] = [
    'none',
    'none',
    'none',
    'none',
    'extra',
    'rows-mismatch',
    'float64',
    'array',
    'detached',
    'abort-before',
    'abort-after',
    'deadline',
    'transfer',
    'transfer-then-detach',
    'transfer-twice',
    'inject-copy',
    'inject-alloc',
    'inject-sync',
  ];
  const [IN, OUT, MAX] = [24, 10, 150];

  /** The codes a call with this flaw may end with ('ok': it resolved). */
  function allowed(flaw: Flaw, tooLarge: boolean, waits: boolean, armed: boolean): string[] {
    const busy = waits ? [] : ['OMNI_ERR_REJECTED'];
    // An injection arms a fault in whichever thread takes it, for some later call there.
    if (flaw.startsWith('inject-')) return ['ok', ...busy];
    const native = armed ? ['OMNI_ERR_NATIVE'] : [];
    // Too many rows is found with the shape, before the signal (as Runtime.run checks options first).
    if (tooLarge && !['extra', 'rows-mismatch', 'float64', 'array', 'detached'].includes(flaw)) {
      return ['OMNI_ERR_TOO_LARGE'];
    }
    switch (flaw) {
      case 'none':
      case 'transfer':
        return ['ok', ...busy, ...native];
      case 'abort-before':
        return ['OMNI_ERR_ABORTED'];
      case 'abort-after':
        return ['ok', 'OMNI_ERR_ABORTED', ...busy, ...native];
      case 'deadline':
        return ['ok', 'OMNI_ERR_DEADLINE', ...busy, ...native];
      // Detached before a thread took it (its call queued): refused at the post.
      case 'transfer-then-detach':
      case 'transfer-twice':
        return ['ok', 'OMNI_ERR_INVALID_ARGUMENT', ...busy, ...native];
      default:
        return ['OMNI_ERR_INVALID_ARGUMENT'];
    }
  }

  it.each([
    ['the serial scheduler, 1 thread', 1, undefined],
    ['a refusing bound, 2 threads', 2, { requests: 4, units: 200 }],
    ['a waiting bound, 2 threads', 2, { requests: 3, units: 160, wait: true }],
  ])(
    '%s: random calls, some illegal, aborted or with deadlines: right answers or coded errors, nothing leaked',
    async (what, threads, admission) => {
      const baseline = faults.liveBytes();
      const weights = seededWeights(IN, OUT, 9);
      const lr = await LinearRuntime.start({
        backend: 'fixture',
        threads,
        weights,
        faultInjection: true,
        workspaceBytes: 2 * (IN + OUT) * 4 * MAX,
        ...(admission === undefined ? {} : { admission }),
      });
      runtimes.push(lr);
      expect(lr.maxRows).toBe(MAX);
      const waits = admission === undefined || ('wait' in admission && admission.wait);
      const direct = NativeContext.open(loadNativeLibrary('fixture'));
      direct.uploadWeights(weights.w, weights.b, OUT, IN);
      const call = fc.record({
        rows: fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: MAX - 10, max: MAX + 10 })),
        seed: fc.integer({ min: 0, max: 2 ** 31 }),
        rate: fc.constantFrom(0, 0.05),
        at: placement,
        flaw: fc.constantFrom(...FLAWS),
      });
      const outcomes = new Map<string, number>();
      let armed = false;
      await fc.assert(
        fc.asyncProperty(fc.array(call, { minLength: 1, maxLength: 8 }), async (calls) => {
          const results = await Promise.all(
            calls.map(async (c) => {
              const values = floatsWith(c.seed, c.rows * IN, 2, c.rate);
              const moves = c.flaw.startsWith('transfer');
              // A shared buffer cannot be transferred: those calls use a plain one.
              const x = place(values, moves && c.at.startsWith('shared') ? 'plain' : c.at, 2);
              const ac = new AbortController();
              const started: Array<Promise<Float32Array | null>> = [];
              switch (c.flaw) {
                case 'extra':
                  started.push(lr.run(place(floatsWith(c.seed, c.rows * IN + 1, 2, 0), c.at, 2)));
                  break;
                case 'rows-mismatch':
                  started.push(lr.run(x, { rows: c.rows + 1 }));
                  break;
                case 'float64':
                  started.push(lr.run(Float64Array.from(values) as never));
                  break;
                case 'array':
                  started.push(lr.run(Array.from(values) as never));
                  break;
                case 'detached': {
                  const d = new Float32Array(values);
                  structuredClone(d.buffer, { transfer: [d.buffer] });
                  started.push(lr.run(d, { rows: c.rows }));
                  break;
                }
                case 'abort-before':
                  ac.abort();
                  started.push(lr.run(x, { signal: ac.signal }));
                  break;
                case 'abort-after':
                  started.push(lr.run(x, { signal: ac.signal }));
                  ac.abort();
                  break;
                case 'deadline':
                  started.push(lr.run(x, { deadlineMs: 1 }));
                  break;
                case 'transfer':
                  started.push(lr.run(x, { transfer: [x.buffer as ArrayBuffer] }));
                  break;
                case 'transfer-then-detach':
                  started.push(lr.run(x, { transfer: [x.buffer as ArrayBuffer] }));
                  // Moved elsewhere before a thread took it (unless one already has).
                  if (x.byteLength > 0) structuredClone(x.buffer, { transfer: [x.buffer as ArrayBuffer] });
                  break;
                case 'transfer-twice':
                  started.push(lr.run(x, { transfer: [x.buffer as ArrayBuffer] }));
                  started.push(lr.run(x, { transfer: [x.buffer as ArrayBuffer] }));
                  break;
                case 'inject-copy':
                case 'inject-alloc':
                case 'inject-sync':
                  armed = true;
                  started.push(
                    lr.runtime.run({
                      inject:
                        c.flaw === 'inject-copy' ? 'copy' : c.flaw === 'inject-alloc' ? 'alloc' : 'sync',
                      after: 1 + (c.seed % 4),
                    }),
                  );
                  break;
                default:
                  started.push(lr.run(x));
              }
              return Promise.all(
                started.map(async (p) => {
                  try {
                    return { c, values, y: await p, code: 'ok', err: undefined };
                  } catch (e) {
                    const err = e as { code?: string; nativeCode?: number; fatal?: boolean };
                    return { c, values, y: undefined, code: err.code ?? 'uncoded', err };
                  }
                }),
              );
            }),
          );
          for (const { c, values, y, code, err } of results.flat()) {
            const key = `${c.flaw}:${code}`;
            outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
            expect(allowed(c.flaw, c.rows > MAX, waits, armed), `${c.flaw} rows ${c.rows}`).toContain(code);
            if (code === 'OMNI_ERR_NATIVE') {
              expect(err).toMatchObject({ fatal: false });
              expect([NativeStatus.OUT_OF_MEMORY, NativeStatus.COPY_FAILED, NativeStatus.DEVICE]).toContain(
                err?.nativeCode,
              );
            }
            if (y instanceof Float32Array) {
              expect(y.length).toBe(c.rows * OUT);
              expect(firstMismatch(y, values, weights.w, weights.b, c.rows, OUT, IN)).toBe(-1);
              // Bit for bit the direct call's answer: nothing from the thread's earlier calls in it.
              expect(y).toEqual(direct.linearGelu(values, c.rows));
            }
          }
        }),
        { seed: SEED, numRuns: Math.ceil(RUNS / 3), endOnFailure: true },
      );
      // Every kind of call was made, and some were served: a generator that stopped making one
      // would otherwise pass on what is left.
      if (RUNS >= 100) {
        const made = new Set([...outcomes.keys()].map((key) => key.slice(0, key.indexOf(':'))));
        expect([...made].sort(), what).toEqual([...new Set(FLAWS)].sort());
        expect(outcomes.get('none:ok') ?? 0, what).toBeGreaterThan(0);
      }
      expect(lr.report()).toMatchObject({ state: 'ready' });
      // Calls the last round aborted or timed out settled their callers, but their work may still
      // hold capacity: stats() (cost 1) would then be refused, for some seeds.
      await until(() => lr.report().depth === 0, "the last round's work to end");
      const stats = await lr.stats();
      expect(stats.cachedWorkspaces).toBeLessThanOrEqual(4);
      await lr.close();
      direct.close();
      runtimes.length = 0;
      // Every thread survived to run its close hook: the fixture holds what it held before.
      expect(lr.report()).toMatchObject({ depth: 0, units: 0, leaked: 0 });
      expect(faults.liveBytes()).toBe(baseline);
    },
  );
});
