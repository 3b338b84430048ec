/**
 * The signal a request's work is given: it aborts when the client goes away before its answer
 * is written, including when the connection was already gone by the time the handler asked
 * (the body was read, then the client left).
 */
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { clientGone } from '../src/serve/client-gone.js';

/** One request to a server whose handler runs `handle`; resolves with what it returned. */
async function oneRequest<T>(handle: (res: ServerResponse, destroy: () => void) => Promise<T>): Promise<T> {
  let result!: Promise<T>;
  const handled = new Promise<void>((resolve) => {
    const server = createServer((req, res) => {
      result = handle(res, () => req.socket.destroy());
      void result.finally(() => server.close());
      resolve();
    });
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      const client = request({ host: '127.0.0.1', port, method: 'POST' });
      client.on('error', () => {}); // the server may cut it off on purpose
      client.end('body');
    });
  });
  await handled;
  return result;
}

describe('clientGone', () => {
  it('aborts when the client leaves while the work runs', async () => {
    const aborted = await oneRequest(async (res, destroy) => {
      const signal = clientGone(res);
      const heard = new Promise<boolean>((resolve) => signal.addEventListener('abort', () => resolve(true)));
      expect(signal.aborted).toBe(false);
      destroy();
      return heard;
    });
    expect(aborted).toBe(true);
  });

  it('starts aborted when the connection was already gone', async () => {
    const aborted = await oneRequest(async (res, destroy) => {
      const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
      destroy();
      await closed;
      return clientGone(res).aborted;
    });
    expect(aborted).toBe(true);
  });

  it('does not abort once the answer was written', async () => {
    const aborted = await oneRequest(async (res) => {
      const signal = clientGone(res);
      const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
      res.end('ok');
      await closed;
      return signal.aborted || clientGone(res).aborted;
    });
    expect(aborted).toBe(false);
  });

  // Node 24.20+ and 26.7+ leave writableFinished false for an answer whose connection closed
  // before all of it was out (nodejs/node#64847); before, node read it true once the closed
  // buffers emptied.
  it('does not abort once the answer was written, though its connection closed before all of it was out', async () => {
    const seen = await oneRequest(async (res, destroy) => {
      const signal = clientGone(res);
      const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
      // More than a loopback connection takes at once: most of it is still in node's buffers.
      res.end(Buffer.alloc(32 * 1024 * 1024));
      const pending = res.writableLength > 0;
      destroy();
      await closed;
      return { pending, aborted: signal.aborted, late: clientGone(res).aborted };
    });
    expect(seen).toEqual({ pending: true, aborted: false, late: false });
  });
});
