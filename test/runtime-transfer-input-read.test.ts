/**
 * A listed buffer is checked at the post for being detached; structured clone then reads the
 * input, running the caller's own getters in it. The check ran before the input was read: a
 * getter that detached a listed buffer passed it, Node posted a view of the detached buffer, and
 * the thread died reading the message (OMNI_ERR_WORKER_EXITED, its close hook skipped).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, codeOf, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

describe('transfer: the input read at the post', () => {
  it('a getter in the input that detaches a listed buffer: OMNI_ERR_INVALID_ARGUMENT, the thread lives', async () => {
    const rt = await start({ threads: 1, admission: { requests: 4, units: 16 } });
    await rt.run({ mode: 'transfer-twice' }); // marks this thread: last-sent-length 0 here, -1 in a new one
    const sent = new Uint8Array(64);
    const input = {
      mode: 'echo',
      get detach(): number {
        structuredClone(sent.buffer, { transfer: [sent.buffer] }); // given elsewhere mid-post
        return 0;
      },
      value: sent,
    };
    expect(await codeOf(rt.run(input, { transfer: [sent.buffer], cost: 5 }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    await expect(rt.run({ mode: 'last-sent-length' })).resolves.toBe(0);
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, running: 0, completed: 2, failed: 1 });
  });

  it('a getter in the input that shrinks a listed resizable buffer under a view already read: OMNI_ERR_INVALID_ARGUMENT, the thread lives', async () => {
    // The view was written at 64 bytes, the buffer moved with 32: the worker failed to read the
    // message and its thread died (OMNI_ERR_WORKER_EXITED); the buffer was not detached, so the
    // check for that passed it.
    const rt = await start({ threads: 1, admission: { requests: 4, units: 16 } });
    await rt.run({ mode: 'transfer-twice' }); // marks this thread: last-sent-length 0 here, -1 in a new one
    const resizable = new ArrayBuffer(64, { maxByteLength: 128 });
    const input = {
      mode: 'echo',
      value: new Uint8Array(resizable, 0, 64),
      get shrink(): number {
        resizable.resize(32);
        return 0;
      },
    };
    expect(await codeOf(rt.run(input, { transfer: [resizable], cost: 5 }))).toBe('OMNI_ERR_INVALID_ARGUMENT');
    await expect(rt.run({ mode: 'last-sent-length' })).resolves.toBe(0);
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, running: 0, completed: 2, failed: 1 });
  });
});
