/**
 * Claims of docs/runtime.md and docs/native.md about Runtime and LinearRuntime that no other
 * test pins, one `it` each, the page's words in its name.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  LinearRuntime,
  type LinearRuntimeOptions,
  MAX_ROWS,
  type RunOptions,
  Runtime,
  seededWeights,
} from '../src/index.js';
import { rowsPerCall } from '../src/linear/start-options.js';
import { builtModuleUrl } from '../src/paths.js';
import { checkRuntimeOptions } from '../src/runtime/options.js';
import { NODE_MAJOR, NODE_MINOR } from './fixtures/node-version.js';
import { INVOKED, newControl, open, STARTED, waitFor } from './fixtures/runtime-control.js';
import {
  cleanupOnRealClock,
  codeOf,
  control,
  gate,
  rejection,
  start,
  turns,
  until,
} from './fixtures/runtime-harness.js';
import { tempDirs } from './fixtures/temp-dirs.js';

afterEach(cleanupOnRealClock);

const ECHO = fileURLToPath(builtModuleUrl('test/fixtures/echo-worker.js'));
const API = builtModuleUrl('test/fixtures/worker-api-worker.js');
const tempDir = tempDirs('omni-readme-runtime-');

describe('docs/runtime.md: Runtime', () => {
  it('"a relative one taken from the working directory, not from the calling module"', async () => {
    const fromCwd = relative(process.cwd(), ECHO);
    const fromHere = relative(dirname(fileURLToPath(import.meta.url)), ECHO);
    // The two must differ, or the second half says nothing.
    expect(resolve(fromHere)).not.toBe(ECHO);
    const rt = await start({ worker: fromCwd });
    expect(await rt.run(21)).toBe(21);
    // Taken from the working directory, the module's own relative path names no file: Node's
    // loader error passes through with its code (Errors: "ERR_MODULE_NOT_FOUND for a worker file
    // that is missing").
    expect(await codeOf(start({ worker: fromHere }))).toBe('ERR_MODULE_NOT_FOUND');
  });

  it('"threads defaults to 1"', async () => {
    const ends: string[] = [];
    const rt = await start({
      worker: ECHO,
      threadEnds: { exited: () => ends.push('exited'), stopped: () => ends.push('stopped') },
    });
    expect(await rt.run(1)).toBe(1);
    await rt.close();
    // Every thread the pool started is reported once: one, then stopped.
    expect(ends).toEqual(['exited', 'stopped']);
  });

  it('"A typed array is cloned with its whole buffer, not just its view, in an input (or a result)"', async () => {
    const rt = await start({ worker: ECHO });
    const whole = new ArrayBuffer(64 * 1024);
    new Uint8Array(whole).fill(7);
    // Echoed back: its buffer crossed twice, into the thread and back, each time as a clone.
    const back = (await rt.run(new Uint8Array(whole, 1024, 2))) as Uint8Array;
    expect([back.byteOffset, back.length, back.buffer.byteLength]).toEqual([1024, 2, whole.byteLength]);
    expect(new Uint8Array(back.buffer)[0]).toBe(7);
  });

  it('"An error a handler leaves behind ... fires during a later call": the first that lets the loop turn rejects OMNI_ERR_WORKER_EXITED', async () => {
    const exited: string[] = [];
    const rt = await start({
      threads: 1,
      threadEnds: { exited: () => exited.push('exited'), stopped: () => {} },
    });
    expect(await rt.run({ mode: 'leave-error', value: 'a' })).toBe('a');
    // The idle thread's loop is blocked between calls, and this handler only awaits promises.
    expect(await rt.run({ mode: 'echo', value: 'b' })).toBe('b');
    expect(exited).toEqual([]);
    // This one awaits a timer: the error, due first, fires in it and ends the thread.
    expect(await codeOf(rt.run({ mode: 'await-timer', value: 'c' }))).toBe('OMNI_ERR_WORKER_EXITED');
    expect(rt.report()).toMatchObject({ depth: 0, completed: 2 });
    // "capacity comes back and a replacement thread serves".
    expect(await rt.run({ mode: 'await-timer', value: 'd' })).toBe('d');
    await until(() => exited.length > 0, 'the ended thread to be told');
    expect(exited).toEqual(['exited']);
  });

  // Node 22.18+ strips types by default: the claim is Node 20's.
  it.runIf(NODE_MAJOR === 20)(
    '"Worker modules must be built JavaScript on Node 20 (no type stripping)": a .ts one fails start()',
    async () => {
      const source = fileURLToPath(new URL('./fixtures/echo-worker.ts', import.meta.url));
      expect(await codeOf(start({ worker: source }))).toBe('ERR_UNKNOWN_FILE_EXTENSION');
    },
  );

  it.runIf(NODE_MAJOR >= 23 || (NODE_MAJOR === 22 && NODE_MINOR >= 18))(
    '"Node 22.18+, 24 and 26 run a .ts worker as it is ... imports real files": one importing the built package serves',
    async () => {
      const worker = join(tempDir(), 'typed-worker.ts');
      const index = builtModuleUrl('src/index.js');
      writeFileSync(
        worker,
        `import { defineWorker } from ${JSON.stringify(index)};\n` +
          'export default defineWorker((input: number): number => input + 1);\n',
      );
      const rt = await start({ worker });
      expect(await rt.run(41)).toBe(42);
      // The repository's own .ts fixtures import src/*.js, which is no file: refused at start().
      const source = fileURLToPath(new URL('./fixtures/echo-worker.ts', import.meta.url));
      expect(await codeOf(start({ worker: source }))).toBe('ERR_MODULE_NOT_FOUND');
    },
  );

  it('"deadlineMs, the default": the start option, none (undefined) without one or with Infinity', async () => {
    expect((await start({ worker: ECHO, deadlineMs: 250 })).deadlineMs).toBe(250);
    expect((await start({ worker: ECHO })).deadlineMs).toBeUndefined();
    expect((await start({ worker: ECHO, deadlineMs: Number.POSITIVE_INFINITY })).deadlineMs).toBeUndefined();
  });

  it('"startTimeoutMs (30,000 ...)": by default a close hook is waited for 30 s, then cut short', async () => {
    const closed = newControl();
    const rt = await start({
      worker: builtModuleUrl('test/fixtures/runtime-init-worker.js'),
      threads: 1,
      workerData: { closed: closed.buffer, closeGate: true },
    });
    let settled = false;
    // The main thread's clock is faked once the runtime is up, so the test says when time passes.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const closing = rt.close().finally(() => {
      settled = true;
    });
    await waitFor(closed, INVOKED, 1, closing); // the hook runs, held at its gate
    vi.advanceTimersByTime(29_999);
    await turns();
    expect(settled).toBe(false);
    vi.advanceTimersByTime(1);
    vi.useRealTimers();
    await closing;
    // Cut short: the hook never returned, and the runtime stopped all the same.
    expect(Atomics.load(closed, STARTED)).toBe(0);
    expect(rt.report().state).toBe('stopped');
  });

  it('"run(input, options?: RunOptions) with cost (1)": a call without a cost is admitted at 1', async () => {
    const rt = await start({ worker: API, admission: { requests: 2, units: 4 } });
    // ctx.cost is "what the call was admitted with".
    expect(await rt.run({ mode: 'limits' })).toMatchObject({ cost: 1 });
    expect(await rt.run({ mode: 'limits' }, {})).toMatchObject({ cost: 1 });
    expect(await rt.run({ mode: 'limits' }, { cost: 3 })).toMatchObject({ cost: 3 });
  });

  it('"one above 1,048,576 (1 TiB), a stackSizeMb under 1 or a maxOldGenerationSizeMb under 4" is refused; those ends are taken', async () => {
    const ends = { stackSizeMb: 1, maxOldGenerationSizeMb: 1_048_576, codeRangeSizeMb: 1_048_576 };
    expect(checkRuntimeOptions({ worker: ECHO, resourceLimits: ends }).resourceLimits).toEqual(ends);
    const least = { maxOldGenerationSizeMb: 4 };
    expect(checkRuntimeOptions({ worker: ECHO, resourceLimits: least }).resourceLimits).toEqual(least);
    for (const past of [
      { stackSizeMb: 0.999 },
      { maxYoungGenerationSizeMb: 1_048_577 },
      { maxOldGenerationSizeMb: 3.999 },
    ]) {
      expect([past, await codeOf(Runtime.start({ worker: ECHO, resourceLimits: past }))]).toEqual([
        past,
        'OMNI_ERR_INVALID_ARGUMENT',
      ]);
    }
  });

  it('"So do the options of Runtime.run ... before anything is admitted (counted invalid)"', async () => {
    const rt = await start({ worker: ECHO, admission: { requests: 1, units: 4 } });
    // `deadline` for `deadlineMs` and `costs` for `cost`: they ran with the defaults, unrefused.
    for (const misspelt of [{ deadline: 1 }, { costs: 100 }, { cost: 1, signal: undefined, deadlinMs: 5 }]) {
      const err = await rejection(rt.run('x', misspelt as RunOptions));
      expect([misspelt, err.code]).toEqual([misspelt, 'OMNI_ERR_INVALID_ARGUMENT']);
    }
    expect((await rejection(rt.run('x', { costs: 1 } as RunOptions))).message).toContain(
      'did you mean cost?',
    );
    expect(rt.report()).toMatchObject({ completed: 0, invalid: 4, refused: 0, depth: 0, units: 0 });
    // Every documented key is still taken, and inherited ones (a class's getters) are read.
    const all = { cost: 2, signal: new AbortController().signal, deadlineMs: 60_000, transfer: [] };
    expect(await rt.run('x', all satisfies Required<RunOptions>)).toBe('x');
    class Costly {
      get cost(): number {
        return 5;
      }
    }
    expect((await rejection(rt.run('x', new Costly()))).code).toBe('OMNI_ERR_TOO_LARGE');
    // A Proxy whose key list throws rejects with its own error, before admission.
    const thrown = new Error('no keys');
    const keyless = new Proxy(
      {},
      {
        ownKeys: () => {
          throw thrown;
        },
      },
    );
    expect(await rejection(rt.run('x', keyless))).toBe(thrown);
    expect(rt.report()).toMatchObject({ completed: 1, depth: 0, units: 0 });
  });

  it('"leaked: ... 0 in a runtime, whose permits are all claims"', async () => {
    const rt = await start({ worker: ECHO, admission: { requests: 2, units: 10 } });
    await Promise.all([rt.run(1, { cost: 3 }), rt.run(2, { cost: 4 })]);
    expect(rt.report()).toMatchObject({ leaked: 0, depth: 0, units: 0, completed: 2 });
  });
});

describe('docs/runtime.md: Runtime report()', () => {
  it('"With wait: true it also includes waits that timed out, ... deadline, and waiters that close() turned away, ... unavailable"', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1, wait: true } });
    const a = control();
    const running = rt.run(gate(a, { value: 'a' }));
    await waitFor(a, STARTED, 1, running);
    expect(await codeOf(rt.run({ mode: 'echo' }, { deadlineMs: 5 }))).toBe('OMNI_ERR_DEADLINE');
    expect(rt.report()).toMatchObject({ rejected: 1, deadline: 1 });
    // An abort is no refusal: it leaves `rejected` as it was.
    const aborting = new AbortController();
    const aborted = rt.run({ mode: 'echo' }, { signal: aborting.signal });
    aborting.abort();
    expect(await codeOf(aborted)).toBe('OMNI_ERR_ABORTED');
    expect(rt.report()).toMatchObject({ rejected: 1, aborted: 1 });
    const waiting = rt.run({ mode: 'echo' });
    const closing = rt.close();
    expect(await codeOf(waiting)).toBe('OMNI_ERR_UNAVAILABLE');
    open(a);
    await expect(running).resolves.toBe('a');
    await closing;
    expect(rt.report()).toMatchObject({ rejected: 2, deadline: 1, aborted: 1, unavailable: 1, completed: 1 });
  });
});

describe('docs/native.md: LinearRuntime', () => {
  it('"the Runtime options but worker, workerData and threadEnds": those are refused', async () => {
    // A library path that cannot load: a key checked after loading would be LIBRARY_NOT_FOUND.
    const libraries = { fixture: '/nonexistent/libomni_fixture.so' };
    for (const extra of [{ worker: ECHO }, { workerData: 1 }]) {
      const options = { backend: 'fixture', libraries, ...extra } as LinearRuntimeOptions;
      expect([extra, await codeOf(LinearRuntime.start(options))]).toEqual([
        extra,
        'OMNI_ERR_INVALID_ARGUMENT',
      ]);
    }
  });

  it('"seededWeights(inFeatures, outFeatures, seed = 1)": the default seed is 1', () => {
    const [byDefault, one, two] = [seededWeights(4, 2), seededWeights(4, 2, 1), seededWeights(4, 2, 2)];
    expect(byDefault).toEqual(one);
    expect(byDefault.w).not.toEqual(two.w);
  });

  it('"8,192 rows at 4096 -> 4096 with the default 512 MiB"; "lr.maxRows (65,536 here)" at 256 -> 256', () => {
    expect(rowsPerCall(undefined, 4096, 4096)).toBe(8192);
    expect(rowsPerCall(undefined, 256, 256)).toBe(MAX_ROWS);
    expect(MAX_ROWS).toBe(65_536);
  });

  it('"workerData, weights, threadEnds ... are yours and never key-checked"', async () => {
    const weights = { ...seededWeights(4, 2), note: 'kept beside the weights' };
    const lr = await LinearRuntime.start({
      backend: 'fixture',
      threads: 1,
      weights,
      inFeatures: 4,
      outFeatures: 2,
    });
    try {
      expect((await lr.run(new Float32Array(4))).length).toBe(2);
    } finally {
      await lr.close();
    }
    const threadEnds = { exited() {}, stopped() {}, label: 'mine' };
    const rt = await start({ worker: ECHO, threadEnds, workerData: { anyKey: 1 } });
    expect(await rt.run(1)).toBe(1);
  });
});
