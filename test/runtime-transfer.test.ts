/**
 * Zero-copy both ways: buffers named in `transfer` are detached on the caller and arrive
 * intact in the worker; buffers a handler names with ctx.transfer are detached in the worker
 * and arrive intact with the result. Without `transfer` the input is copied.
 */
import { runInNewContext } from 'node:vm';
import { Piscina } from 'piscina';
import { afterEach, describe, expect, it } from 'vitest';
import { transferListOf, WorkerTaskContext } from '../workers/task-context.js';
import { searched } from './fixtures/array-searches.js';
import { open, STARTED, type TransferReply, waitFor } from './fixtures/runtime-control.js';
import { cleanup, codeOf, control, gate, rejection, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

function pattern(bytes: number): { buffer: ArrayBuffer; sum: number } {
  const view = new Uint8Array(bytes);
  let sum = 0;
  for (let i = 0; i < bytes; i++) {
    view[i] = (i * 7) & 0xff;
    sum += view[i]!;
  }
  return { buffer: view.buffer, sum };
}

function expectPattern(buffer: ArrayBuffer, bytes: number): void {
  expect(buffer.byteLength).toBe(bytes);
  const view = new Uint8Array(buffer);
  for (let i = 0; i < bytes; i++) if (view[i] !== (i & 0xff)) throw new Error(`byte ${i} is ${view[i]}`);
}

describe('transfer', () => {
  it('moves the input to the worker (detached here, intact there) and the result back', async () => {
    for (const admission of [undefined, { requests: 2, units: 1 << 20 }]) {
      const rt = await start({ threads: 1, ...(admission ? { admission } : {}) });
      const bytes = 1 << 20;
      const sent = pattern(bytes);
      const call = rt.run<TransferReply>(
        { mode: 'transfer', buffer: sent.buffer, replyBytes: 4096 },
        { transfer: [sent.buffer], cost: 1 },
      );
      const reply = await call;
      expect(sent.buffer.byteLength).toBe(0);
      expect(reply.receivedBytes).toBe(bytes);
      expect(reply.receivedSum).toBe(sent.sum);
      expectPattern(reply.reply, 4096);
      // The worker kept a reference to what it sent: it was detached there by the move.
      await expect(rt.run({ mode: 'last-sent-length' })).resolves.toBe(0);
    }
  });

  it('without transfer, the input is copied and stays usable here', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const sent = pattern(1024);
    const reply = await rt.run<TransferReply>({ mode: 'transfer', buffer: sent.buffer, replyBytes: 16 });
    expect(sent.buffer.byteLength).toBe(1024);
    expect(reply.receivedSum).toBe(sent.sum);
    expectPattern(reply.reply, 16);
  });

  it('several buffers move in one call', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const a = pattern(64);
    const b = pattern(128);
    const reply = await rt.run<TransferReply>(
      { mode: 'echo', value: { a: a.buffer, b: b.buffer } },
      { transfer: [a.buffer, b.buffer] },
    );
    expect(a.buffer.byteLength).toBe(0);
    expect(b.buffer.byteLength).toBe(0);
    const value = reply as unknown as { a: ArrayBuffer; b: ArrayBuffer };
    expect(value.a.byteLength).toBe(64);
    expect(value.b.byteLength).toBe(128);
  });

  // A post refuses a list naming a buffer twice: the call was admitted, then failed (counted
  // failed), where ctx.transfer and a move() take a repeat as harmless.
  it('a buffer listed twice moves once, and the call is served', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const a = pattern(64);
    const b = pattern(32);
    const reply = await rt.run<TransferReply>(
      { mode: 'echo', value: { a: a.buffer, b: b.buffer } },
      { transfer: [a.buffer, b.buffer, a.buffer, b.buffer, a.buffer] },
    );
    expect([a.buffer.byteLength, b.buffer.byteLength]).toEqual([0, 0]);
    const value = reply as unknown as { a: ArrayBuffer; b: ArrayBuffer };
    expect([value.a.byteLength, value.b.byteLength]).toEqual([64, 32]);
    // A long list (past the search, into a set) the same way.
    const many = Array.from({ length: 17 }, (_, i) => pattern(i + 1).buffer);
    const back = await rt.run<TransferReply>({ mode: 'echo', value: many }, { transfer: [...many, ...many] });
    expect(many.map((buffer) => buffer.byteLength)).toEqual(many.map(() => 0));
    expect((back as unknown as ArrayBuffer[]).map((buffer) => buffer.byteLength)).toEqual(
      many.map((_, i) => i + 1),
    );
    expect(rt.report()).toMatchObject({ completed: 2, failed: 0, invalid: 0, depth: 0 });
  });

  // An empty buffer has no bytes, as a detached one: only its refusing a view tells them apart.
  it('an empty buffer listed moves as any other, not refused as detached', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const empty = new ArrayBuffer(0);
    const reply = await rt.run<TransferReply>({ mode: 'echo', value: empty }, { transfer: [empty] });
    expect(() => new Uint8Array(empty)).toThrow(TypeError); // detached by the move
    expect((reply as unknown as ArrayBuffer).byteLength).toBe(0);
  });

  it('a refused call moves nothing: the buffer stays with the caller', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1, units: 10 } });
    const sent = pattern(256);
    expect(
      await codeOf(rt.run({ mode: 'echo', value: sent.buffer }, { transfer: [sent.buffer], cost: 11 })),
    ).toBe('OMNI_ERR_TOO_LARGE');
    expect(sent.buffer.byteLength).toBe(256);
  });

  it('a transfer list that is not ArrayBuffers is refused before anything moves', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const view = new Uint8Array(8);
    const code = await codeOf(
      rt.run({ mode: 'echo', value: view }, { transfer: [view] as unknown as ArrayBuffer[] }),
    );
    expect(code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(view.byteLength).toBe(8);
    // Refused by the option check, before admission: not a call admitted and then failed.
    expect(rt.report()).toMatchObject({ depth: 0, invalid: 1, failed: 0 });
  });

  // What an ArrayBuffer is, not its prototype chain: one made in another realm (a vm context, a
  // test sandbox) is an ArrayBuffer postMessage moves, and an object that only inherits from
  // ArrayBuffer.prototype is not one (its post would fail after admission).
  it('an ArrayBuffer from another realm moves; an object faking one is refused before admission', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const foreign = runInNewContext('new Uint8Array([1, 2, 3, 4]).buffer') as ArrayBuffer;
    const reply = await rt.run<TransferReply>(
      { mode: 'transfer', buffer: foreign, replyBytes: 0 },
      { transfer: [foreign] },
    );
    expect(reply).toMatchObject({ receivedBytes: 4, receivedSum: 10 });
    expect(foreign.byteLength).toBe(0); // moved, not copied

    const fake = Object.create(ArrayBuffer.prototype) as ArrayBuffer;
    expect(await codeOf(rt.run({ mode: 'echo', value: 1 }, { transfer: [fake] }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    expect(rt.report()).toMatchObject({ completed: 1, invalid: 1, failed: 0, depth: 0 });
  });

  it('a buffer the handler returns, named with ctx.transfer, is moved: detached in the worker', async () => {
    const rt = await start({ threads: 1 });
    const buffer = await rt.run<ArrayBuffer>({ mode: 'transfer-twice' });
    expect(buffer.byteLength).toBe(8);
    await expect(rt.run({ mode: 'last-sent-length' })).resolves.toBe(0);
  });

  it('a move()-style input whose value getter throws fails its call once (OMNI_ERR_INVALID_ARGUMENT), and its capacity returns', async () => {
    // It throws after the call was admitted and its claim taken, while the envelope is built: no
    // thread exited (it was OMNI_ERR_WORKER_EXITED). test/runtime-input-post.test.ts has the rest.
    const rt = await start({ threads: 1, admission: { requests: 1 } });
    const thrown = new Error('no value');
    const input = {
      get [Piscina.transferableSymbol]() {
        return [];
      },
      get [Piscina.valueSymbol]() {
        throw thrown;
      },
    };
    expect(await rejection(rt.run(input))).toMatchObject({
      code: 'OMNI_ERR_INVALID_ARGUMENT',
      cause: thrown,
    });
    expect(rt.report()).toMatchObject({ depth: 0, failed: 1, running: 0 });
    await expect(rt.run({ mode: 'echo', value: 'next' })).resolves.toBe('next');
  });

  it('a queued call whose listed buffer was detached before its post: OMNI_ERR_INVALID_ARGUMENT, the thread lives', async () => {
    // Node posts a view of a detached buffer listed for transfer without a word; the worker then
    // fails to read the message, and that killed its thread (its close hook skipped).
    const rt = await start({ threads: 1, admission: { requests: 4, units: 16 } });
    await rt.run({ mode: 'transfer-twice' }); // marks this thread: last-sent-length 0 here, -1 in a new one
    const c = control();
    const busy = rt.run(gate(c));
    await waitFor(c, STARTED, 1, busy);
    const sent = new Uint8Array(64);
    const queued = rt.run({ mode: 'echo', value: sent }, { transfer: [sent.buffer], cost: 5 });
    structuredClone(sent.buffer, { transfer: [sent.buffer] }); // given elsewhere before the post
    open(c);
    await busy;
    expect(await codeOf(queued)).toBe('OMNI_ERR_INVALID_ARGUMENT');
    await expect(rt.run({ mode: 'last-sent-length' })).resolves.toBe(0);
    // Its 5 units came back once and the call counts once, as failed.
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, running: 0, completed: 3, failed: 1 });
  });

  it('the transfer list is read at run(): a buffer put in the array afterwards is not moved instead', async () => {
    // The serial scheduler builds its task after awaiting admission: the array was read then,
    // so a reused array moved the buffer it held by that time and copied the one the call named.
    const rt = await start({ threads: 1 });
    const named = pattern(64);
    const other = pattern(32);
    const list = [named.buffer];
    const call = rt.run<TransferReply>({ mode: 'echo', value: named.buffer }, { transfer: list });
    list[0] = other.buffer;
    expect(((await call) as unknown as ArrayBuffer).byteLength).toBe(64);
    expect({ named: named.buffer.byteLength, other: other.buffer.byteLength }).toEqual({
      named: 0,
      other: 32,
    });
  });

  it('a queued call whose transfer array was changed after run(): the buffer it named is the one checked at the post', async () => {
    // piscina copies the list at run(); the check at the post read the caller's array, so with
    // the named buffer detached and another put in its place the check passed, Node posted the
    // detached one, and the thread died (OMNI_ERR_WORKER_EXITED).
    const rt = await start({ threads: 1, admission: { requests: 4 } });
    const c = control();
    const busy = rt.run(gate(c));
    await waitFor(c, STARTED, 1, busy);
    const sent = new Uint8Array(64);
    const list = [sent.buffer];
    const queued = rt.run({ mode: 'echo', value: sent }, { transfer: list });
    list[0] = new ArrayBuffer(8);
    structuredClone(sent.buffer, { transfer: [sent.buffer] }); // given elsewhere before the post
    open(c);
    await busy;
    expect(await codeOf(queued)).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(rt.report()).toMatchObject({ depth: 0, running: 0, failed: 1 });
  });

  it('a listed buffer already detached when an idle thread takes the call: OMNI_ERR_INVALID_ARGUMENT, the thread lives', async () => {
    // piscina posts at once, inside run(): the same check refuses it there.
    const rt = await start({ threads: 1, admission: { requests: 4, units: 16 } });
    await rt.run({ mode: 'transfer-twice' }); // marks this thread: last-sent-length 0 here, -1 in a new one
    const sent = new Uint8Array(64);
    structuredClone(sent.buffer, { transfer: [sent.buffer] });
    expect(await codeOf(rt.run({ mode: 'echo', value: sent }, { transfer: [sent.buffer], cost: 5 }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    await expect(rt.run({ mode: 'last-sent-length' })).resolves.toBe(0);
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, running: 0, completed: 2, failed: 1 });
  });

  it('a listed buffer already detached whose own byteLength says 64: OMNI_ERR_INVALID_ARGUMENT, the thread lives', async () => {
    // The check at the post read the buffer's own byteLength: a lie passed it, Node posted the
    // detached buffer, and the thread died (OMNI_ERR_WORKER_EXITED).
    const rt = await start({ threads: 1, admission: { requests: 4, units: 16 } });
    await rt.run({ mode: 'transfer-twice' }); // marks this thread: last-sent-length 0 here, -1 in a new one
    const sent = new Uint8Array(64);
    structuredClone(sent.buffer, { transfer: [sent.buffer] });
    const listed = Object.defineProperty(sent.buffer, 'byteLength', { value: 64 });
    expect(await codeOf(rt.run({ mode: 'echo', value: sent }, { transfer: [listed], cost: 5 }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    await expect(rt.run({ mode: 'last-sent-length' })).resolves.toBe(0);
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, running: 0, completed: 2, failed: 1 });
  });
});

describe('ctx.transfer', () => {
  // Before: each buffer was looked for in the list so far, O(k^2) for a result of k buffers
  // listed one by one (50,000: ~1.7 s in ctx.transfer alone).
  it('lists k buffers, each once and in order, without searching the list for each', () => {
    const ctx = new WorkerTaskContext(
      new Int32Array(1),
      { admission: 1, slot: 0, generation: 0, units: 0 },
      1,
      0,
    );
    const buffers = Array.from({ length: 2_000 }, () => new ArrayBuffer(4));
    const elements = searched(() => {
      for (const buffer of buffers) ctx.transfer(buffer);
      ctx.transfer(buffers[0]!, buffers[1_999]!); // named again: still listed once
    });
    expect(transferListOf(ctx)).toEqual(buffers);
    expect(transferListOf(ctx).every((buffer, i) => buffer === buffers[i])).toBe(true);
    expect(elements).toBeLessThanOrEqual(buffers.length);
  });
});
