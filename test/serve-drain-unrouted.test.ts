/**
 * A drain's accounting of the requests answered without reaching a route: a request node could
 * not parse (its 400 written raw, client-error.ts) and a CONNECT (501). Their answer is owed, so
 * in flight, until it is out: a drain waits for it as for any other, and one it cuts off is
 * abandoned, never counted in omni_http_client_errors_total as answered. A client that does not
 * read is forced by holding the server's writes on its connection (the kernel taking no more of
 * it), so that the answer stays in this process.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServeHandle } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { turns, until } from './fixtures/runtime-harness.js';
import { closeServed, holdNextConnection, listeningClient, startServed } from './fixtures/serve-harness.js';

afterEach(closeServed);

/** 256 rows of 16,384 floats: a 16 MiB answer, far more than loopback's socket buffers hold. */
const IN = 4;
const OUT = 16_384;
const ROWS = 256;

async function start(): Promise<ServeHandle> {
  const { s } = await startServed(
    { inFeatures: IN, outFeatures: OUT, open: true },
    { sendTimeoutMs: Number.POSITIVE_INFINITY },
  );
  return s;
}

async function scrape(s: ServeHandle): Promise<string> {
  return (await s.metrics.scrape()).text;
}

const CLIENT_ERRORS = (detail: string): string => `omni_http_client_errors_total{detail="${detail}"}`;

/**
 * Sends `request` on a new connection whose server-side writes are held (a client that takes
 * nothing); resolves once its answer is written, and held, in this process.
 */
async function answerHeld(s: ServeHandle, request: string) {
  const held = holdNextConnection(s);
  const client = listeningClient(s.port);
  client.socket.write(request);
  const answer = await held;
  await until(() => answer.connection.writableLength > 0, 'the answer to be written');
  return { ...client, ...answer };
}

/**
 * Drains `s`, cut short at once (a second signal) over the one held answer: abandoned, not
 * clean, the client heard nothing. Resolves to the metrics after.
 */
async function cutOffByDrain(s: ServeHandle, heard: () => string): Promise<string> {
  const drained = s.drain({ timeoutMs: 600_000 });
  s.expireDrain();
  expect(await drained).toEqual({ clean: false, abandonedRequests: 1 });
  expect(heard()).toBe('');
  return scrape(s);
}

describe('an answer written raw, held in this process, then cut off by the drain', () => {
  it.each([
    ['a request node cannot parse (400)', 'GARBAGE / HTTP/1.1\r\n\r\n', 'HPE_INVALID_METHOD'],
    ['a CONNECT (501)', 'CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n', 'CONNECT'],
  ])('%s: in flight, abandoned, not clean, not counted as answered', async (_name, request, detail) => {
    const s = await start();
    const { heard } = await answerHeld(s, request);
    // Before: 0 in flight, the drain clean at once ({ clean: true, abandonedRequests: 0 }), and
    // the answer counted in omni_http_client_errors_total though the client never got it.
    expect(sample(await scrape(s), 'omni_http_inflight')).toBe(1);
    const text = await cutOffByDrain(s, heard);
    expect(sample(text, CLIENT_ERRORS(detail))).toBeUndefined();
    expect(sample(text, 'omni_http_inflight')).toBe(0);
  });

  it.each([
    ['a request node cannot parse (400)', 'GARBAGE / HTTP/1.1\r\n\r\n', 400, 'HPE_INVALID_METHOD'],
    ['a CONNECT (501)', 'CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n', 501, 'CONNECT'],
  ])('%s: a drain waits for it, and is clean once it is out', async (_name, request, status, detail) => {
    const { g, s } = await startServed(
      { inFeatures: IN, outFeatures: OUT, open: true },
      { sendTimeoutMs: Number.POSITIVE_INFINITY },
    );
    const { socket: c, heard, release } = await answerHeld(s, request);
    // Not before release(): the connection is closed only once the held answer is out.
    const closed = new Promise<void>((resolve) => c.once('close', () => resolve()));
    const drained = s.drain({ timeoutMs: Number.POSITIVE_INFINITY });
    await turns();
    // Still waiting for the answer, before its runtime's close. Before: it did not wait (the
    // runtime closing at once), and its cut then closed the connection over the answer.
    expect(g.lr.runtime.state).toBe('ready');
    release();
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
    await closed;
    expect(heard()).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(sample(await scrape(s), CLIENT_ERRORS(detail))).toBe(1);
  });
});

it('a routed request whose body failed, its 400 written raw and held, cut off by the drain: 444, not counted', async () => {
  const s = await start();
  const { heard } = await answerHeld(
    s,
    'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
      `Transfer-Encoding: chunked\r\n\r\n10\r\n${'\0'.repeat(16)}\r\nQQ\r\n`,
  );
  // Before: node called the held write back without error as the drain destroyed the connection,
  // taken for the answer out: counted, and recorded 400.
  const text = await cutOffByDrain(s, heard);
  const recorded = (status: number): number | undefined =>
    sample(
      text,
      `omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="${status}"}`,
    );
  expect([recorded(444), recorded(400)]).toEqual([1, undefined]);
  expect(sample(text, CLIENT_ERRORS('HPE_INVALID_CHUNK_SIZE'))).toBeUndefined();
});

it('an unsupported Expect, its 417 held, cut off by the drain: 444, not counted as answered', async () => {
  const s = await start();
  const { heard } = await answerHeld(s, 'GET /health HTTP/1.1\r\nHost: x\r\nExpect: x-unsupported\r\n\r\n');
  // Before: counted, node saying 'finish' for the held write it called back as the drain
  // destroyed the connection.
  const text = await cutOffByDrain(s, heard);
  expect(
    sample(text, 'omni_http_request_duration_seconds_count{route="unmatched",method="GET",status="444"}'),
  ).toBe(1);
  expect(sample(text, CLIENT_ERRORS('EXPECTATION_FAILED'))).toBeUndefined();
});

/** A request for 16 MiB on a connection whose client reads none of it. */
function unread(c: Socket): void {
  c.pause();
  const body = Buffer.alloc(ROWS * IN * 4);
  c.write(
    `POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${body.length}\r\n\r\n`,
  );
  c.write(body);
}

/** Resolves once the first answer on the server is handed to its connection. */
function firstAnswerWritten(s: ServeHandle): Promise<void> {
  return new Promise<void>((resolve) => {
    s.app.server.once('request', (_req, res: ServerResponse) => res.once('prefinish', () => resolve()));
  });
}

describe('an answer written raw, queued behind an unread answer the drain cuts off', () => {
  it.each([
    ['a request node cannot parse', 'GARBAGE / HTTP/1.1\r\n\r\n', 'clientError'],
    ['a CONNECT', 'CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n', 'connect'],
  ])('%s: in flight and abandoned with it', async (_name, request, event) => {
    const s = await start();
    const written = firstAnswerWritten(s);
    const heard = new Promise<void>((resolve) => s.app.server.once(event, () => resolve()));
    const { socket: c } = listeningClient(s.port);
    unread(c);
    c.write(request);
    await Promise.all([written, heard]);
    // Before: 1 in flight and 1 abandoned, the unread answer alone.
    expect(sample(await scrape(s), 'omni_http_inflight')).toBe(2);
    const drained = s.drain({ timeoutMs: 600_000 });
    s.expireDrain();
    expect(await drained).toEqual({ clean: false, abandonedRequests: 2 });
    const text = await scrape(s);
    const cut = 'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="444"}';
    expect(sample(text, cut)).toBe(1);
    expect(text).not.toContain('omni_http_client_errors_total{');
    expect(sample(text, 'omni_http_inflight')).toBe(0);
  });
});
