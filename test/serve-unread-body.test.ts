/**
 * Answers given before a request's body was read, outside the route's own error path: a
 * malformed URL (answered by fastify before routing) and a GET whose body nobody reads. node
 * would go on parsing that body on a kept-alive connection, so a malformed rest of it drew a
 * second, unasked answer; one request must get one answer, and the connection then closes.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { ServeHandle } from '../src/serve/index.js';
import { answerThenMalformedRest } from './fixtures/serve-client.js';
import { sharedServed } from './fixtures/serve-harness.js';

const shared = sharedServed({ inFeatures: 4, outFeatures: 3, open: true, admission: { requests: 4 } });
afterAll(shared.close);

afterEach(() => {
  vi.useRealTimers();
});

/**
 * Holds the linger's bound (linger.ts, a 2 s timer) off: a test whose client does everything in
 * time must not be cut off because this process stalled past it (a busy machine), the timer then
 * firing before the bytes that wait in the socket are read. Waits then poll on turns of this
 * thread instead of a timer.
 */
function holdLingerBound(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
}

/** Polls on turns of this thread (the timers are fake); a bound on the count, not the clock. */
async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let turn = 0; !predicate(); turn++) {
    if (turn === 1_000_000) throw new Error(`never saw ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * A connected client that reads only once it has sent everything (paused), with the server's
 * side of its connection; `failed()` is the code of any error the client heard (EPIPE, reset).
 */
async function uploadingClient(s: ServeHandle): Promise<{
  client: Socket;
  server: Socket;
  closed: Promise<void>;
  failed: () => string | undefined;
}> {
  const client = connect({ host: '127.0.0.1', port: s.port });
  client.pause();
  const serverSide = new Promise<Socket>((resolve) => s.app.server.once('connection', resolve));
  let code: string | undefined;
  client.on('error', (err: NodeJS.ErrnoException) => {
    code = err.code;
  });
  const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
  await new Promise<void>((resolve) => client.once('connect', () => resolve()));
  return { client, server: await serverSide, closed, failed: () => code };
}

describe('an answer sent before the body was read', () => {
  it.each([
    ['POST /v1/linear%zz HTTP/1.1', 400],
    ['GET /health HTTP/1.1', 200],
    ['GET /metrics HTTP/1.1', 200],
  ])('%s: one answer (%i) with Connection: close, no second one', async (requestLine, status) => {
    const { g, s } = await shared();
    const before = g.entered();
    const text = await answerThenMalformedRest(s.port, requestLine);
    expect(text.match(/HTTP\/1\.1 \d{3} /g)).toEqual([`HTTP/1.1 ${status} `]);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(g.entered() - before).toBe(0);
  });
});

describe('a connection that an answer closes', () => {
  it('bytes the client still sends after the answer do not reset it: the answer is read, the close is clean', async () => {
    const { s } = await shared();
    const clientErrors = async (): Promise<string> =>
      (await s.metrics.scrape()).text
        .split('\n')
        .filter((l) => l.startsWith('omni_http_client_errors_total'))
        .join('\n');
    const errorsBefore = await clientErrors();
    holdLingerBound();
    const { client, server, closed, failed } = await uploadingClient(s);
    // Refused before its body is read (415): answered with Connection: close while uploading.
    const body = 'x'.repeat(1000);
    const sent = new Promise<number>((resolve) => {
      // Runs as the answer has gone out, before anything else the server does then.
      server.once('finish', () => {
        client.write(body.slice(10, 500));
        resolve(server.bytesRead);
      });
    });
    const head = `POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n`;
    client.write(head + body.slice(0, 10));
    const readBefore = await sent;
    // Until the server closed its socket (before: a reset, for the bytes it left unread) or read
    // those bytes (it lingers).
    await until(
      () => server.destroyed || server.bytesRead >= readBefore + 490,
      'the server to close or read',
    );
    client.write(body.slice(500));
    const chunks: Buffer[] = [];
    client.on('data', (chunk: Buffer) => chunks.push(chunk));
    client.resume();
    await closed;
    // Before: EPIPE on the write, and the answer never read.
    expect(failed()).toBeUndefined();
    // The client's close, with the refused body unfinished, is not malformed HTTP.
    await until(() => server.destroyed, 'the server to close');
    expect(await clientErrors()).toBe(errorsBefore);
    expect(Buffer.concat(chunks).toString('latin1')).toMatch(
      /^HTTP\/1\.1 415 [\s\S]*\r\nconnection: close\r\n/i,
    );
  });

  it('a request node cannot parse: bytes the client still sends do not reset it, the 400 is read', async () => {
    const { s } = await shared();
    holdLingerBound();
    const { client, server, closed, failed } = await uploadingClient(s);
    client.write('POST /v1/linear HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n');
    // Until the 400 went out (before: with the socket destroyed at once).
    await until(() => server.destroyed || server.writableEnded, 'the server to answer');
    const readBefore = server.bytesRead;
    client.write('x'.repeat(490));
    // Until the server read those bytes (it lingers) or they met its closed socket (before: a
    // reset, which the next write hears as EPIPE before the client read the answer).
    await until(
      () => server.destroyed || server.bytesRead >= readBefore + 490,
      'the server to close or read',
    );
    client.write('x'.repeat(500));
    const chunks: Buffer[] = [];
    client.on('data', (chunk: Buffer) => chunks.push(chunk));
    client.resume();
    await closed;
    expect(failed()).toBeUndefined();
    const text = Buffer.concat(chunks).toString('latin1');
    expect(text).toMatch(/^HTTP\/1\.1 400 [\s\S]*\r\nConnection: close\r\n/i);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toMatchObject({
      code: 'OMNI_ERR_BAD_REQUEST',
    });
  });

  it('a client that keeps its side open after a 400 for unparsable bytes is cut off by the server', async () => {
    const { s } = await shared();
    const serverSide = new Promise<Socket>((resolve) => s.app.server.once('connection', resolve));
    // allowHalfOpen: the client does not answer the server's FIN with its own, so only the
    // linger's bound (linger.ts) closes the server's socket; without one this test times out.
    const client = connect({ host: '127.0.0.1', port: s.port, allowHalfOpen: true });
    client.on('error', () => {});
    const chunks: Buffer[] = [];
    client.on('data', (chunk: Buffer) => chunks.push(chunk));
    const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
    const server = await serverSide;
    const serverClosed = new Promise<void>((resolve) => server.once('close', () => resolve()));
    client.write('GARBAGE\r\n\r\n');
    await ended;
    await serverClosed;
    client.destroy();
    expect(Buffer.concat(chunks).toString('latin1')).toMatch(/^HTTP\/1\.1 400 /);
  });
});
