/**
 * What a server keeps of the requests it has answered: nothing that grows with them. A service
 * keeps one server up for weeks, on connections kept alive for long and on connections that come
 * and go (some leaving mid-upload, some sending what is not HTTP). The same traffic runs N times
 * and then 10N times; what the process holds after 10N must be what it held after N.
 * vitest.config.ts starts the test processes with --expose-gc.
 */
import type { ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { type ServeHandle, serve } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { Collectable, fdCount } from './fixtures/process-figures.js';
import { until } from './fixtures/runtime-harness.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import { startGated } from './fixtures/serve-harness.js';

const ROW = Buffer.from(new Float32Array([1, 2, 3, 4]).buffer);
const LEFT = 'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="499"}';

function post(type: string, body: Buffer | string, extra = ''): Buffer {
  const bytes = Buffer.from(body);
  return Buffer.concat([
    Buffer.from(
      `POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${bytes.length}\r\n${extra}\r\n`,
    ),
    bytes,
  ]);
}

/** Requests that each get an answer and leave the connection open; `i` varies the 404's path. */
function keptAliveRequests(i: number): Buffer[] {
  return [
    post('application/octet-stream', ROW),
    post('application/json', '{"rows":[[1,2,3,4]]}'),
    post('application/octet-stream', ROW, 'x-omni-deadline-ms: 1\r\n'), // 200 or 504
    post('application/json', '{not json'), // 400, read whole: the connection stays
    Buffer.from(`GET /nope/${i} HTTP/1.1\r\nHost: x\r\n\r\n`), // 404: one label set, not one per path
    Buffer.from('DELETE /v1/linear HTTP/1.1\r\nHost: x\r\n\r\n'),
    Buffer.from('GET /health HTTP/1.1\r\nHost: x\r\n\r\n'),
  ];
}

/** Counts the answers (status lines; not a 100 Continue) heard on a client connection. */
function answersOn(socket: Socket): () => number {
  let heard = 0;
  let rest = '';
  socket.on('data', (chunk: Buffer) => {
    rest += chunk.toString('latin1');
    const found = [...rest.matchAll(/HTTP\/1\.1 [2-5]\d\d /g)];
    heard += found.length;
    const last = found.at(-1);
    rest = (last ? rest.slice(last.index + last[0].length) : rest).slice(-16);
  });
  return () => heard;
}

function listenerCount(socket: Socket): number {
  let count = 0;
  for (const name of socket.eventNames()) count += socket.listenerCount(name);
  return count;
}

async function sampleLines(handle: ServeHandle): Promise<number> {
  const { text } = await handle.metrics.scrape();
  return text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length;
}

async function inflight(handle: ServeHandle): Promise<number> {
  const { text } = await handle.metrics.scrape();
  return Number(/^omni_http_inflight (\d+)$/m.exec(text)?.[1]);
}

async function started(open = true) {
  const gated = await startGated({ open, admission: { requests: 8, units: 64 } });
  const handle = await serve(gated.lr, { port: 0 });
  const responses = new Collectable();
  handle.app.server.on('request', (_req: unknown, res: ServerResponse) => responses.register(res));
  // Connections too: one node hands over (a CONNECT's) is the drain's to close (Drain.adopt).
  const sockets = new Collectable();
  handle.app.server.on('connection', (socket: Socket) => sockets.register(socket));
  return { gated, handle, responses, sockets };
}

describe('a server serving for long', () => {
  it('one kept-alive connection, requests pipelined, holds nothing per request', async () => {
    const { gated, handle, responses } = await started();
    const accepted: Socket[] = [];
    handle.app.server.on('connection', (socket: Socket) => accepted.push(socket));
    const client = connect(handle.port, '127.0.0.1');
    try {
      await new Promise((resolve) => client.once('connect', resolve));
      const heard = answersOn(client);
      let sent = 0;
      const rounds = async (n: number): Promise<void> => {
        for (let i = 0; i < n; i++) {
          const batch = keptAliveRequests(sent);
          sent += batch.length;
          client.write(Buffer.concat(batch));
          await until(() => heard() >= sent, `${sent} answers`);
        }
      };
      const figures = async () => {
        await until(() => gated.lr.report().depth === 0, 'every call to end');
        await until(async () => (await inflight(handle)) === 0, 'every response to close');
        const [socket] = accepted;
        return {
          connections: accepted.length,
          socketListeners: socket ? listenerCount(socket) : -1,
          socketSymbols: socket ? Object.getOwnPropertySymbols(socket).length : -1,
          samples: await sampleLines(handle),
          // The connection's latest answers are kept (client-error.ts, node's parser): a fixed few.
          uncollected: await responses.uncollected(),
        };
      };
      await rounds(5);
      const atN = await figures();
      expect(atN.connections).toBe(1);
      await rounds(50);
      expect(await figures()).toEqual(atN);
    } finally {
      client.destroy();
      await handle.close();
    }
  });

  it('connections that come and go, some leaving mid-upload, leave nothing behind', async () => {
    const { gated, handle, responses, sockets } = await started(false);
    try {
      const visit = (bytes: Buffer, leave: boolean): Promise<void> =>
        new Promise((resolve) => {
          const socket = connect(handle.port, '127.0.0.1');
          socket.on('error', () => {});
          socket.on('data', () => {});
          socket.once('close', () => resolve());
          const heard = answersOn(socket);
          // Leaving: once what was written is out. Staying: until the answer, then closing.
          socket.write(bytes, () => {
            if (leave) socket.destroy();
          });
          if (!leave) {
            socket.on('data', () => {
              if (heard() > 0) socket.end();
            });
          }
        });
      const round = (): Promise<unknown> =>
        Promise.all([
          visit(post('application/octet-stream', ROW), false),
          visit(post('application/octet-stream', ROW), true), // gone with its call in flight
          // Gone mid-upload: 16 of 1,600 bytes sent.
          visit(
            Buffer.concat([
              Buffer.from(
                'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 1600\r\n\r\n',
              ),
              ROW,
            ]),
            true,
          ),
          // The same to a path no route serves: followed, while its body is read, for the drain.
          visit(
            Buffer.concat([
              Buffer.from(
                'POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 1600\r\n\r\n',
              ),
              ROW,
            ]),
            true,
          ),
          visit(Buffer.from('CONNECT x:1 HTTP/1.1\r\nHost: x\r\n\r\n'), false),
          visit(Buffer.from('NOT HTTP\r\n\r\n'), false),
          visit(post('text/plain', 'x'), false), // 415 before the body: the server closes
        ]);
      const rounds = async (n: number): Promise<void> => {
        for (let i = 0; i < n; i++) await round();
      };
      const connections = (): Promise<number> =>
        new Promise((resolve) => handle.app.server.getConnections((_err, count) => resolve(count)));
      const figures = async () => {
        // A closing connection lingers while the client's side is still open (linger.ts): each
        // client here has closed, so each server side closes too.
        await until(async () => (await connections()) === 0, 'every connection to close');
        await until(() => gated.lr.report().depth === 0, 'every call to end');
        await until(async () => (await inflight(handle)) === 0, 'every response to close');
        return {
          samples: await sampleLines(handle),
          uncollected: await responses.uncollected(),
          sockets: await sockets.uncollected(),
        };
      };
      // A client gone with its call in flight is a 499, or a 200 when its answer was out before
      // the server heard it leave: both label sets exist before the first figures, one 499 made
      // sure of (before, a run whose first rounds had none grew by one set). It leaves once its
      // call is held in the worker: leaving at once, it may be heard before the call starts.
      const client = connect(handle.port, '127.0.0.1');
      client.on('error', () => {});
      const gone = new Promise((resolve) => client.once('close', resolve));
      client.write(post('application/octet-stream', ROW));
      await gated.reach(ENTERED, 1);
      client.destroy();
      await gone;
      await until(
        async () => sample((await handle.metrics.scrape()).text, LEFT) === 1,
        'the client that left to be recorded',
      );
      gated.open();
      await rounds(3);
      const atN = await figures();
      expect([atN.uncollected, atN.sockets]).toEqual([0, 0]);
      const fdsAtN = fdCount();
      await rounds(30);
      expect(await figures()).toEqual(atN);
      await until(() => fdCount() <= fdsAtN, `file descriptors back to ${fdsAtN}`);
    } finally {
      await handle.close();
    }
  });
});
