/**
 * A result whose buffer code the handler left running detaches after the handler returned, and
 * before piscina posts the reply. Unlisted, the post threw in the thread: it died (its call
 * failed, a replacement served), or, in a worker that handles uncaught errors itself, lived on
 * with the call 'running' until its deadline. Listed, the post went through and the main thread
 * could not read it: 'running' again (on Node 21+, the post threw, as unlisted). Now the reply
 * is checked as it is posted: the call fails OMNI_ERR_TASK_FAILED and the same thread serves on.
 * A primitive's listed buffer, detached so, had its post refused on Node 21+ as well: it is now
 * moved as the handler returns.
 * Clone refusals of the worker's own, caught or swallowed, fail nothing and end no thread.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import type { LateDetachInput } from './fixtures/late-detach-handler.js';
import { NODE_MAJOR } from './fixtures/node-version.js';
import { cleanup, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const SWALLOWING = builtModuleUrl('test/fixtures/late-detach-worker.js');
const DYING = builtModuleUrl('test/fixtures/late-detach-handler.js');
const STRICT = builtModuleUrl('test/fixtures/late-detach-strict-worker.js');

/** Microtask delays tried: from before the entry's check to past piscina's post. */
const DELAYS = 12;

type Started = Awaited<ReturnType<typeof start>>;

interface Form {
  readonly form: string;
  readonly mode: 'detach' | 'shrink';
  readonly worker: string;
  readonly listed: boolean;
  readonly dataView: boolean;
  readonly primitive: boolean;
  readonly writes: boolean;
}

/** Each call's outcome, 'ok' or its error's code, one per delay. */
async function outcomes(rt: Started, input: (delay: number) => LateDetachInput): Promise<string[]> {
  const seen: string[] = [];
  for (let delay = 0; delay < DELAYS; delay++) {
    // The deadline only bounds a call that would never settle (it then fails as DEADLINE).
    const outcome = await rt.run(input(delay), { deadlineMs: 10_000 }).then(
      () => 'ok',
      (err: { code?: string }) => String(err.code),
    );
    seen.push(outcome);
    if (outcome === 'OMNI_ERR_DEADLINE') break; // every later call would wait as long
  }
  return seen;
}

const threadOf = (rt: Started) => rt.run({ mode: 'thread' });

describe('a result buffer detached between the return and the post', () => {
  /** Unless said: a Uint8Array, unlisted, a worker that swallows uncaught errors, no output. */
  const row = (form: string, mode: 'detach' | 'shrink', more: Partial<Form> = {}): Form => ({
    form,
    mode,
    worker: SWALLOWING,
    listed: false,
    dataView: false,
    primitive: false,
    writes: false,
    ...more,
  });
  it.each([
    row('detached, unlisted', 'detach'),
    row('detached, listed with ctx.transfer', 'detach', { listed: true }),
    row('detached, listed, under Node 21+ (refusing a detached buffer listed)', 'detach', {
      listed: true,
      worker: STRICT,
    }),
    row('shrunk, listed, under Node 21+', 'shrink', { listed: true, worker: STRICT }),
    row('detached, listed, under Node 21+, with the output of the handler pending', 'detach', {
      listed: true,
      worker: STRICT,
      writes: true,
    }),
    row('a primitive result, its buffer detached, listed, under Node 21+', 'detach', {
      listed: true,
      worker: STRICT,
      primitive: true,
    }),
    row('detached, unlisted, uncaught errors left to end the thread', 'detach', { worker: DYING }),
    row('shrunk out from under the view', 'shrink'),
    row('under a DataView, detached, unlisted', 'detach', { dataView: true }),
    row('under a DataView, detached, listed', 'detach', { dataView: true, listed: true }),
    row('under a DataView, detached, uncaught errors left to end the thread', 'detach', {
      dataView: true,
      worker: DYING,
    }),
    row('shrunk out from under a DataView', 'shrink', { dataView: true }),
  ])(
    '$form: the call fails OMNI_ERR_TASK_FAILED, the thread serves on',
    async ({ mode, worker, listed, dataView, primitive, writes }) => {
      const rt = await start({ worker, threads: 1 });
      const thread = await threadOf(rt);
      const seen = await outcomes(rt, (delay) => ({ mode, delay, listed, dataView, primitive, writes }));
      // Detached before the entry's check, or as the reply is posted: failed; after: too late to matter.
      expect(new Set(seen)).toEqual(new Set(['ok', 'OMNI_ERR_TASK_FAILED']));
      const failed = seen.filter((outcome) => outcome !== 'ok').length;
      expect(await threadOf(rt)).toBe(thread);
      expect(rt.report()).toMatchObject({
        state: 'ready',
        depth: 0,
        running: 0,
        failed,
        completed: DELAYS - failed + 2,
      });
    },
  );
});

const primitiveListed = (delay: number): LateDetachInput => ({
  mode: 'detach',
  delay,
  listed: true,
  primitive: true,
});

// Node 21 refuses a detached buffer in a transfer list, which Node 20 took (nodejs/node#47604).
it.runIf(NODE_MAJOR === 20)(
  'a primitive result, its buffer detached, listed, under Node 20: every call answers, on one thread',
  async () => {
    // Node 20 moves a detached buffer listed, and nothing in the reply refers to it.
    const rt = await start({ worker: SWALLOWING, threads: 1 });
    const thread = await threadOf(rt);
    expect(await outcomes(rt, primitiveListed)).toEqual(Array(DELAYS).fill('ok'));
    expect(await threadOf(rt)).toBe(thread);
    expect(rt.report()).toMatchObject({ state: 'ready', depth: 0, running: 0, failed: 0 });
  },
);

it.runIf(NODE_MAJOR >= 21)(
  'a primitive result, its buffer detached, listed, under Node 21+: each call answers as under the emulated check, on one thread',
  async () => {
    const rt = await start({ worker: SWALLOWING, threads: 1 });
    const thread = await threadOf(rt);
    const seen = await outcomes(rt, primitiveListed);
    expect(seen).toEqual(await outcomes(await start({ worker: STRICT, threads: 1 }), primitiveListed));
    // Detached before the move as the handler returns: failed; after: moved already.
    expect(new Set(seen)).toEqual(new Set(['ok', 'OMNI_ERR_TASK_FAILED']));
    const failed = seen.filter((outcome) => outcome !== 'ok').length;
    expect(await threadOf(rt)).toBe(thread);
    expect(rt.report()).toMatchObject({ state: 'ready', depth: 0, running: 0, failed });
  },
);

it.each([false, true])(
  'a buffer grown under a view that tracks its length, at any moment (listed: %s): every call answers',
  async (listed) => {
    const rt = await start({ worker: SWALLOWING, threads: 1 });
    expect(await outcomes(rt, (delay) => ({ mode: 'grow', delay, listed }))).toEqual(
      Array(DELAYS).fill('ok'),
    );
    expect(rt.report()).toMatchObject({ state: 'ready', depth: 0, running: 0, failed: 0 });
  },
);

it("the worker's own clone refusals, caught or swallowed, at any moment: every call answers, on one thread", async () => {
  const rt = await start({ worker: SWALLOWING, threads: 1 });
  const thread = await threadOf(rt);
  expect(await outcomes(rt, (delay) => ({ mode: 'own', delay }))).toEqual(Array(DELAYS).fill('ok'));
  expect(await threadOf(rt)).toBe(thread);
  expect(rt.report()).toMatchObject({ state: 'ready', depth: 0, running: 0, failed: 0 });
});
