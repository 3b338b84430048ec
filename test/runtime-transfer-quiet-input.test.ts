/**
 * An input whose clone runs no caller code (a primitive, a buffer, a view) gets the transfer
 * list's check at the post from a named accessor, read after the whole message, and the message
 * keeps plain elements: accessor elements made structured clone take its sparse-array path, a
 * cost of ~5 µs a call in the 1 MiB round trip (docs/benchmarks.md, bench/transfer-sweep.bench.ts). A listed
 * buffer detached before the post must still be refused there, as for any other input: Node 20
 * posts a view of a detached buffer listed for transfer, and the worker reading it died.
 */
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { afterEach, describe, expect, it } from 'vitest';
import { type TaskMessage, taskPost } from '../src/envelope.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, codeOf, control, gate, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

type Posted = Record<symbol, unknown>;
const claim = { admission: 7, slot: 1, generation: 2, units: 3 };

/** Posts what run() hands piscina as piscina does: the value, the buffers listed for transfer. */
function post(posted: Posted): TaskMessage {
  const { port1, port2 } = new MessageChannel();
  try {
    port1.postMessage(
      { task: posted[Piscina.valueSymbol] },
      posted[Piscina.transferableSymbol] as ArrayBuffer[],
    );
    return (receiveMessageOnPort(port2)!.message as { task: TaskMessage }).task;
  } finally {
    port1.close();
  }
}

function detach(buffer: ArrayBuffer): void {
  structuredClone(buffer, { transfer: [buffer] });
}

describe('transfer: an input whose clone runs no caller code', () => {
  it('keeps the message elements plain, and arrives moved', () => {
    for (const make of [(b: ArrayBuffer) => b, (b: ArrayBuffer) => new Uint8Array(b, 2), () => 5]) {
      const buffer = new Uint8Array([1, 2, 3, 4]).buffer;
      const input = make(buffer);
      const posted = taskPost(claim, input, 0, [buffer]) as unknown as Posted;
      const message = posted[Piscina.valueSymbol] as TaskMessage;
      for (let i = 0; i < 6; i++) expect(Object.getOwnPropertyDescriptor(message, i)).toHaveProperty('value');
      const received = post(posted);
      expect(buffer.byteLength).toBe(0);
      expect(received[0]).toStrictEqual(structuredClone(make(new Uint8Array([1, 2, 3, 4]).buffer)));
      expect(received).toHaveLength(6);
      expect(received[5]).toBe(0);
    }
  });

  it('a listed buffer detached before the post: the post is refused (DataCloneError)', () => {
    for (const make of [(b: ArrayBuffer) => b, (b: ArrayBuffer) => new Uint8Array(b), () => 'text']) {
      const buffer = new ArrayBuffer(16);
      const posted = taskPost(claim, make(buffer), 0, [buffer]) as unknown as Posted;
      detach(buffer);
      let refusal: unknown;
      try {
        post(posted);
      } catch (err) {
        refusal = err;
      }
      expect(refusal).toBeInstanceOf(DOMException);
      expect((refusal as DOMException).name).toBe('DataCloneError');
    }
  });

  it('a queued call whose input is the listed buffer, detached before its post: OMNI_ERR_INVALID_ARGUMENT, the thread lives', async () => {
    const rt = await start({ threads: 1, admission: { requests: 4, units: 16 } });
    await rt.run({ mode: 'transfer-twice' }); // marks this thread: last-sent-length 0 here, -1 in a new one
    const c = control();
    const busy = rt.run(gate(c));
    await waitFor(c, STARTED);
    const sent = new Uint8Array(64);
    const asBuffer = rt.run(sent.buffer, { transfer: [sent.buffer], cost: 5 });
    const asView = rt.run(sent, { transfer: [sent.buffer], cost: 5 });
    detach(sent.buffer); // given elsewhere before the posts
    open(c);
    await busy;
    expect(await codeOf(asBuffer)).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(await codeOf(asView)).toBe('OMNI_ERR_INVALID_ARGUMENT');
    await expect(rt.run({ mode: 'last-sent-length' })).resolves.toBe(0);
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, running: 0, completed: 3, failed: 2 });
  });
});
