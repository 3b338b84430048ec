/**
 * The task message is one array, [input, admission, slot, generation, units, deadlineAt] (the
 * claim's units are the call's cost, ctx.cost in the worker), and the worker tells it from a
 * ping by Array.isArray. An input of any shape, arrays included,
 * must arrive as structured clone makes it, whether the message goes bare (nothing transferred)
 * or in its envelope with the listed buffers checked through accessors at indexes 0 and 5 (or,
 * for a primitive, buffer or view input, a named one: test/runtime-transfer-quiet-input.test.ts).
 */
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { afterEach, describe, expect, it } from 'vitest';
import { messageClaim, type TaskMessage, taskPost } from '../src/envelope.js';
import { builtModuleUrl } from '../src/paths.js';
import { cleanup, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const ECHO = builtModuleUrl('test/fixtures/echo-worker.js');
const API = builtModuleUrl('test/fixtures/worker-api-worker.js');

/** [1, <hole>, 3, <holes>, 'far']: holes must stay holes. */
function holey(): unknown[] {
  const sparse: unknown[] = [];
  sparse[0] = 1;
  sparse[2] = 3;
  sparse[9] = 'far';
  return sparse;
}

type Posted = Record<symbol, unknown>;

function shapes(): unknown[] {
  const reprototyped = Object.setPrototypeOf([1, 2], { extra: true }) as unknown[];
  return [
    undefined,
    null,
    0,
    'text',
    [],
    [undefined],
    // Seven elements, like the message itself: a flattened or mistaken input would show here.
    [1, 2, 3, 4, 5, 6, 7],
    [[1, [2, [3]]], { kind: 'ping' }],
    holey(),
    reprototyped,
    { kind: 'task', claim: 1 },
    {
      get read() {
        return 'got';
      },
    },
    new Map([[1, [2]]]),
    new Set(['a']),
    new Float64Array([1.5, -2]),
    new SharedArrayBuffer(8),
    10n,
  ];
}

describe('the task message', () => {
  it('an input of any shape reaches the handler as structured clone makes it, with or without transfer', async () => {
    const rt = await start({ worker: ECHO, threads: 1, admission: { requests: 2 } });
    for (const input of shapes()) {
      expect(await rt.run(input)).toStrictEqual(structuredClone(input));
      const moved = new ArrayBuffer(4);
      // The listed buffer need not be in the input: the input alone still arrives.
      expect(await rt.run(input, { transfer: [moved] })).toStrictEqual(structuredClone(input));
      expect(moved.byteLength).toBe(0);
    }
    expect(rt.report()).toMatchObject({ depth: 0, running: 0, failed: 0 });
  });

  it('in its envelope, posted: the input read through the accessor, the claim and limits as numbers', () => {
    const claim = { admission: 2 ** 31 - 1, slot: 65_535, generation: 2 ** 32 - 1, units: 2 ** 40 };
    const buffer = new ArrayBuffer(8);
    const input = [buffer, holey()];
    const post = taskPost(claim, input, 1_700_000_000_000.5, [buffer]) as unknown as Posted;
    const { port1, port2 } = new MessageChannel();
    try {
      port1.postMessage(
        { task: post[Piscina.valueSymbol] },
        post[Piscina.transferableSymbol] as ArrayBuffer[],
      );
      const message = (receiveMessageOnPort(port2)!.message as { task: TaskMessage }).task;
      expect(buffer.byteLength).toBe(0);
      expect(Array.isArray(message)).toBe(true);
      expect(message[0]).toStrictEqual([new ArrayBuffer(8), holey()]);
      expect(messageClaim(message)).toStrictEqual(claim);
      expect(message).toHaveLength(6);
      expect(message[5]).toBe(1_700_000_000_000.5);
    } finally {
      port1.close();
    }
  });

  // Mutants: ctx.cost read from another field of the message (workers/entry.ts), or the
  // deadline read from the cost: nothing checked what the handler's ctx carries.
  it("the handler's ctx carries the call's cost and deadline, with or without transfer", async () => {
    const rt = await start({ worker: API, threads: 1, admission: { requests: 2, units: 100 } });
    const limits = { mode: 'limits' };
    expect(await rt.run(limits, { cost: 3 })).toEqual({ cost: 3, deadlineAt: 0 });
    for (const transfer of [[], [new ArrayBuffer(4)]]) {
      const before = Date.now();
      const seen = (await rt.run(limits, { cost: 7, deadlineMs: 600_000, transfer })) as {
        cost: number;
        deadlineAt: number;
      };
      const after = Date.now();
      expect(seen.cost).toBe(7);
      // Date.now() at the call plus deadlineMs, as the caller's own clock read it.
      expect(seen.deadlineAt).toBeGreaterThanOrEqual(before + 600_000);
      expect(seen.deadlineAt).toBeLessThanOrEqual(after + 600_000);
    }
  });

  // The cost travels as the claim's units: the serial scheduler (no units bound) still admits
  // each call with its cost, so its ctx.cost is the caller's too.
  it("the serial scheduler's ctx carries the call's cost too", async () => {
    const rt = await start({ worker: API, threads: 1 });
    for (const cost of [0, 1, 9, 2 ** 40]) {
      expect(await rt.run({ mode: 'limits' }, { cost })).toEqual({ cost, deadlineAt: 0 });
    }
    expect(await rt.run({ mode: 'limits' })).toEqual({ cost: 1, deadlineAt: 0 });
  });
});
