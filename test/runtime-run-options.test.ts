/**
 * run()'s options are checked before anything is admitted: a malformed option rejects
 * OMNI_ERR_INVALID_ARGUMENT with no capacity taken, in every admission mode, so nothing is
 * stranded and close() still drains.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunOptions } from '../src/index.js';
import { INVOKED } from './fixtures/runtime-control.js';
import { cleanup, codeOf, control, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const MODES = [
  ['bounded', { admission: { requests: 2 } }],
  ['wait mode', { admission: { requests: 2, wait: true } }],
  ['serial', {}],
] as const;

describe('malformed run options take no capacity', () => {
  for (const [mode, options] of MODES) {
    it(`a signal that is not an AbortSignal, options that are not an object (${mode})`, async () => {
      const rt = await start({ threads: 1, ...options });
      const never = control();
      const input = { mode: 'echo', control: never.buffer as SharedArrayBuffer };
      const malformed: unknown[] = [
        { signal: {} },
        { signal: 'abort' },
        { signal: new AbortController() },
        // Passes instanceof, but its getters throw: run() must still reject, not throw.
        { signal: Object.create(AbortSignal.prototype) },
        // Its traps would answer the signal's reads, and its abort reaches the signal it wraps.
        { signal: new Proxy(new AbortController().signal, {}) },
        null,
        'fast',
        42,
      ];
      for (const bad of malformed) {
        expect([bad, await codeOf(rt.run(input, bad as RunOptions))]).toEqual([
          bad,
          'OMNI_ERR_INVALID_ARGUMENT',
        ]);
      }
      expect(rt.report()).toMatchObject({ depth: 0, units: 0, rejected: 0, refused: 0, running: 0 });
      expect(Atomics.load(never, INVOKED)).toBe(0);
      // Nothing is held: the full bound still fits, and close() drains at once.
      await expect(
        Promise.all([rt.run({ mode: 'echo', value: 1 }), rt.run({ mode: 'echo', value: 2 })]),
      ).resolves.toEqual([1, 2]);
      await rt.close();
      expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0 });
    });
  }

  // A getter is the caller's code: one that closes the runtime runs after run() found it ready,
  // and the admission then refuses as closed.
  it('an option getter that closes the runtime: the call rejects OMNI_ERR_UNAVAILABLE', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    let closing: Promise<unknown> | undefined;
    const options = {
      get cost() {
        closing = rt.close();
        return 1;
      },
    };
    expect(await codeOf(rt.run({ mode: 'echo', value: 1 }, options))).toBe('OMNI_ERR_UNAVAILABLE');
    await closing;
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, completed: 0 });
  });

  it('run() without options, or with undefined, uses the defaults', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1 } });
    await expect(rt.run({ mode: 'echo', value: 'a' })).resolves.toBe('a');
    await expect(rt.run({ mode: 'echo', value: 'b' }, undefined)).resolves.toBe('b');
  });
});

describe('every call ends in exactly one outcome: they add up to the calls made', () => {
  for (const [mode, options] of MODES) {
    it(mode, async () => {
      const rt = await start({ threads: 1, ...options });
      let calls = 0;
      const call = (made: Promise<unknown>): Promise<unknown> => {
        calls++;
        return made.then(
          () => 'ok',
          (err: { code?: string }) => err.code,
        );
      };
      const codes = await Promise.all([
        call(rt.run({ mode: 'echo', value: 1 })),
        call(rt.run({ mode: 'echo' }, { cost: -1 })),
        call(rt.run({ mode: 'echo' }, null as unknown as RunOptions)),
        call(rt.run({ mode: 'echo' }, { signal: AbortSignal.abort() })),
        call(rt.run({ mode: 'throw-plain' })),
      ]);
      await rt.close();
      codes.push(await call(rt.run({ mode: 'echo' })));
      expect(codes).toEqual([
        'ok',
        'OMNI_ERR_INVALID_COST',
        'OMNI_ERR_INVALID_ARGUMENT',
        'OMNI_ERR_ABORTED',
        'OMNI_ERR_TASK_FAILED',
        'OMNI_ERR_UNAVAILABLE',
      ]);
      const r = rt.report();
      expect(r).toMatchObject({ completed: 1, invalid: 2, aborted: 1, failed: 1, unavailable: 1 });
      expect(r.completed + r.failed + r.aborted + r.deadline + r.refused + r.invalid + r.unavailable).toBe(
        calls,
      );
    });
  }
});
