/**
 * An input that throws while it is posted to a thread (a getter that throws as structured clone
 * reads it, a move()-style input whose symbols' getters throw) is the caller's mistake, like an
 * input structured clone refuses: OMNI_ERR_INVALID_ARGUMENT, with what the caller's code threw
 * as its `cause`. No thread exited, so none is replaced and none skips its close hook; the
 * call's capacity comes back once and it counts once, as failed. Every path that posts a call
 * is checked: a thread idle at run() (piscina posts inside run()), a call queued behind a busy
 * thread (piscina posts it later, from its own code), `wait: true` and the serial scheduler.
 * workerData that throws while it is cloned at start() is the same mistake there.
 */
import { Piscina } from 'piscina';
import { afterEach, describe, expect, it } from 'vitest';
import { Runtime, type RuntimeOptions } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { INVOKED, newControl, open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, control, gate, rejection, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const CLOSE_COUNT_WORKER = builtModuleUrl('test/fixtures/close-count-worker.js');

/** An input that throws `thrown` while it is posted (or, for a move(), unwrapped at run()). */
type ThrowingInput = (thrown: unknown) => unknown;

const inputs: ReadonlyArray<readonly [string, ThrowingInput, unknown]> = [
  [
    'an input with a getter that throws',
    (thrown) => ({
      mode: 'echo',
      get value() {
        throw thrown;
      },
    }),
    new Error('boom'),
  ],
  [
    'a getter deep in the input that throws a value that is not an Error',
    (thrown) => ({
      mode: 'echo',
      value: [
        1,
        {
          get deep() {
            throw thrown;
          },
        },
      ],
    }),
    { why: 'not an Error' },
  ],
  [
    'a move()-style input whose value getter throws',
    (thrown) => ({
      get [Piscina.transferableSymbol]() {
        return [];
      },
      get [Piscina.valueSymbol]() {
        throw thrown;
      },
    }),
    new Error('no value'),
  ],
  [
    'a move()-style input whose transferable getter throws',
    (thrown) => ({
      get [Piscina.transferableSymbol]() {
        throw thrown;
      },
      get [Piscina.valueSymbol]() {
        return { mode: 'echo', value: 1 };
      },
    }),
    new RangeError('no list'),
  ],
];

const schedulers: ReadonlyArray<readonly [string, Partial<RuntimeOptions>]> = [
  ['bounded admission', { admission: { requests: 3, units: 8 } }],
  ['wait: true', { admission: { requests: 3, units: 8, wait: true } }],
  ['the serial scheduler', {}],
];

describe('an input that throws while it is posted to a thread', () => {
  describe.each(schedulers)('%s', (_name, scheduling) => {
    it.each([
      ['a thread idle at run()', false],
      ['queued behind a busy thread', true],
    ])(
      '%s: OMNI_ERR_INVALID_ARGUMENT with the thrown value as cause; the thread serves on, capacity back once',
      async (_where, queued) => {
        const closed = newControl();
        let exits = 0;
        const rt = await start({
          ...scheduling,
          worker: CLOSE_COUNT_WORKER,
          threads: 1,
          workerData: { closed: closed.buffer },
          threadEnds: {
            exited: () => {
              exits++;
            },
            stopped: () => {},
          },
        });
        const bounded = scheduling.admission !== undefined;
        await rt.run({ mode: 'transfer-twice' }); // marks this thread: last-sent-length 0 here, -1 in a new one
        for (const [what, make, thrown] of inputs) {
          const c = control();
          const busy = queued ? rt.run(gate(c, { value: 'busy' })) : undefined;
          if (busy) await waitFor(c, STARTED, 1, busy);
          const failed = rejection(rt.run(make(thrown), bounded ? { cost: 3 } : undefined));
          // Queued behind it: the thread that refused the post takes the next call.
          const after = rt.run({ mode: 'echo', value: 'after' }, bounded ? { cost: 3 } : undefined);
          if (busy) {
            open(c);
            await expect(busy).resolves.toBe('busy');
          }
          const err = await failed;
          expect({ what, code: err.code, cause: err.cause }).toEqual({
            what,
            code: 'OMNI_ERR_INVALID_ARGUMENT',
            cause: thrown,
          });
          expect(err.cause).toBe(thrown);
          await expect(after).resolves.toBe('after');
        }
        const calls = 1 + inputs.length * (queued ? 3 : 2);
        expect(rt.report()).toMatchObject({
          depth: 0,
          units: 0,
          running: 0,
          queued: 0,
          failed: inputs.length,
          completed: calls - inputs.length,
        });
        // The same thread all along (a replacement would answer -1), and none exited.
        await expect(rt.run({ mode: 'last-sent-length' })).resolves.toBe(0);
        expect(exits).toBe(0);
        await rt.close();
        // Its close hook ran, and it exited once, at close().
        expect({ hooks: Atomics.load(closed, INVOKED), exits }).toEqual({ hooks: 1, exits: 1 });
      },
    );
  });

  it('a full bound admits again at once: the failed call held its request and units only until it failed', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1, units: 4 } });
    for (const [, make, thrown] of inputs) {
      expect((await rejection(rt.run(make(thrown), { cost: 4 }))).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      await expect(rt.run({ mode: 'echo', value: 'next' }, { cost: 4 })).resolves.toBe('next');
    }
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, failed: inputs.length, leaked: 0 });
  });

  it('an input structured clone refuses carries the refusal as its cause', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const err = await rejection(rt.run({ mode: 'echo', value: () => 1 }));
    expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(err.cause).toBeInstanceOf(DOMException);
    expect((err.cause as DOMException).name).toBe('DataCloneError');
  });
});

/**
 * Values the caller's code may throw that throw again as they are read: the rejection must not
 * read them unguarded (a throw there left the call pending for good, its rejection unhandled).
 */
const hostile: ReadonlyArray<readonly [string, () => unknown]> = [
  [
    'an Error whose message getter throws',
    () =>
      Object.defineProperty(new Error('hidden'), 'message', {
        get() {
          throw new Error('message read');
        },
      }),
  ],
  [
    'a native error whose code getter throws',
    () =>
      Object.defineProperty(new TypeError('hidden'), 'code', {
        get() {
          throw new Error('code read');
        },
      }),
  ],
  [
    'a function whose conversion to a string throws',
    () =>
      Object.assign(() => 1, {
        [Symbol.toPrimitive]() {
          throw new Error('string read');
        },
      }),
  ],
  [
    'a Proxy whose prototype cannot be read',
    () =>
      new Proxy(
        {},
        {
          getPrototypeOf() {
            throw new Error('prototype read');
          },
        },
      ),
  ],
];

describe('an input that throws a value that throws again as it is read', () => {
  it.each(hostile)(
    '%s: the call still rejects OMNI_ERR_INVALID_ARGUMENT with it as cause',
    async (_what, make) => {
      const rt = await start({ threads: 1, admission: { requests: 2, units: 4 } });
      const thrown = make();
      let settled = false;
      const failed = rejection(
        rt.run(
          {
            mode: 'echo',
            get value() {
              throw thrown;
            },
          },
          { cost: 2 },
        ),
      ).finally(() => {
        settled = true;
      });
      // The thread was idle: the post failed inside run(), so the call is over before this one's
      // reply can arrive (a call that never settles fails here, not by the test's timeout).
      await expect(rt.run({ mode: 'echo', value: 'next' }, { cost: 2 })).resolves.toBe('next');
      expect(settled).toBe(true);
      const err = await failed;
      expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(err.cause).toBe(thrown);
      expect(rt.report()).toMatchObject({ depth: 0, units: 0, failed: 1, completed: 1 });
    },
  );

  it.each([['a plain Error', () => new Error('boom')] as const, ...hostile])(
    '%s, queued behind a call whose thread exits: OMNI_ERR_WORKER_EXITED (a thread was lost meanwhile), the call settles',
    async (_what, make) => {
      const rt = await start({ threads: 1, admission: { requests: 4 } });
      const thrown = make();
      const c = control();
      const dyingCall = rt.run({ mode: 'block-exit', control: c.buffer as SharedArrayBuffer });
      const dying = rejection(dyingCall);
      await waitFor(c, STARTED, 1, dyingCall);
      let settled = false;
      const failed = rejection(
        rt.run({
          mode: 'echo',
          get value() {
            throw thrown;
          },
        }),
      ).finally(() => {
        settled = true;
      });
      const after = rt.run({ mode: 'echo', value: 'after' });
      open(c);
      expect((await dying).code).toBe('OMNI_ERR_WORKER_EXITED');
      // Posted to the replacement before `after` (in order), so over before its reply arrives.
      await expect(after).resolves.toBe('after');
      expect(settled).toBe(true);
      expect((await failed).code).toBe('OMNI_ERR_WORKER_EXITED');
      expect(rt.report()).toMatchObject({ depth: 0, failed: 2, completed: 1 });
    },
  );

  it.each(hostile)(
    '%s, thrown by workerData at start(): OMNI_ERR_INVALID_ARGUMENT with it as cause',
    async (_what, make) => {
      const thrown = make();
      const { err, exits } = await startWithDataThatThrows(thrown);
      expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(err.cause).toBe(thrown);
      expect(exits).toBe(0);
    },
  );
});

describe('a thread that really fails keeps its own code', () => {
  it.each([
    ['exits in the call', 'exit'],
    ['dies of an uncaught error', 'uncaught'],
  ] as const)('a worker that %s: OMNI_ERR_WORKER_EXITED', async (_what, mode) => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const c = control();
    expect((await rejection(rt.run({ mode, control: c.buffer as SharedArrayBuffer }))).code).toBe(
      'OMNI_ERR_WORKER_EXITED',
    );
    expect(Atomics.load(c, INVOKED)).toBe(1);
    expect(rt.report()).toMatchObject({ depth: 0, failed: 1 });
  });
});

describe('workerData that throws while it is cloned at start()', () => {
  it('start() rejects OMNI_ERR_INVALID_ARGUMENT with the thrown value as cause, and starts no thread', async () => {
    const thrown = new Error('no data');
    const { err, exits } = await startWithDataThatThrows(thrown);
    expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(err.cause).toBe(thrown);
    expect(exits).toBe(0);
  });
});

/** start() with workerData whose getter throws `thrown`; `exits`: threads reported exited. */
async function startWithDataThatThrows(
  thrown: unknown,
): Promise<{ err: Error & { code?: string }; exits: number }> {
  let exits = 0;
  const err = await rejection(
    Runtime.start({
      worker: CLOSE_COUNT_WORKER,
      threads: 1,
      workerData: {
        get closed() {
          throw thrown;
        },
      },
      threadEnds: {
        exited: () => {
          exits++;
        },
        stopped: () => {},
      },
    }),
  );
  return { err, exits };
}
