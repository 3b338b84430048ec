/**
 * The send timeout (serve()'s sendTimeoutMs, `--send-timeout-ms`): a client that stops reading
 * its answer (its TCP window full) held the answer's unsent bytes and its connection for good,
 * since nothing of node:http's times a response out. Answers of 16 MiB here, far more than the
 * loopback's socket buffers hold, so a client that never reads leaves most of one unsent. What
 * the server does is seen on its own side (its connection's 'close', the response's 'prefinish'),
 * never from sleeps.
 */
import { createServer, type ServerResponse } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_SEND_TIMEOUT_MS, type ServeHandle, type ServeOptions } from '../src/serve/index.js';
import { boundSend, sendTimedOut } from '../src/serve/send-timeout.js';
import { sample } from './fixtures/metrics-text.js';
import { FINISHED_ONLY_AT_FINISH } from './fixtures/node-version.js';
import { until } from './fixtures/runtime-harness.js';
import { get } from './fixtures/serve-client.js';
import {
  clients,
  closeServed,
  type Gated,
  holdNextConnection,
  listeningClient,
  startServed,
} from './fixtures/serve-harness.js';

const IN = 4;
const OUT = 16_384;
/** 256 rows of 16,384 floats: a 16 MiB answer. */
const ROWS = 256;

afterEach(async () => {
  vi.useRealTimers();
  await closeServed();
});

async function start(options: ServeOptions): Promise<{ g: Gated; s: ServeHandle }> {
  return startServed({ inFeatures: IN, outFeatures: OUT, open: true, admission: { requests: 2 } }, options);
}

/**
 * Sends one request for a 16 MiB answer and never reads. Resolves with the server's side of the
 * connection and its response once the whole answer was handed to that connection.
 */
async function neverReads(s: ServeHandle): Promise<{ server: Socket; res: ServerResponse }> {
  const written = new Promise<{ server: Socket; res: ServerResponse }>((resolve) => {
    s.app.server.once('request', (_req, res: ServerResponse) => {
      res.once('prefinish', () => resolve({ server: res.socket as Socket, res }));
    });
  });
  const client = connect({ host: '127.0.0.1', port: s.port });
  clients.push(client);
  client.on('error', () => {});
  client.pause();
  const body = Buffer.alloc(ROWS * IN * 4);
  client.write(
    'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
      `Content-Length: ${body.length}\r\n\r\n`,
  );
  client.write(body);
  return written;
}

const CUT = 'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="444"}';

describe('an answer the client does not read', () => {
  it('its connection is closed once sendTimeoutMs passes, recorded as 444; the server serves on', async () => {
    const { g, s } = await start({ sendTimeoutMs: 50 });
    const { server } = await neverReads(s);
    // The call ended before its answer was written: its capacity is back already.
    expect(g.lr.report().depth).toBe(0);
    if (!server.destroyed) await new Promise((resolve) => server.once('close', resolve));
    // node before 24.20 and 26.7 says 'finish' for it all the same (the socket was destroyed under
    // the write; 24.20+ and 26.7+ do not, nodejs/node#64847): not a 200.
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, CUT)).toBe(1);
    expect(sample(text, CUT.replace('444', '200'))).toBeUndefined();
    expect((await get(`http://127.0.0.1:${s.port}`, '/health')).status).toBe(200);
  });

  it('by default it is closed after 300 s (before: never)', async () => {
    const { s } = await start({});
    // The clock is the test's from before the send timer is armed; nothing else the request
    // needs waits on a timer.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { server } = await neverReads(s);
    await vi.advanceTimersByTimeAsync(300_000 - 1);
    expect(server.destroyed).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(server.destroyed).toBe(true);
    expect(DEFAULT_SEND_TIMEOUT_MS).toBe(300_000);
  });

  it('without a send timeout, a drain cuts it off at its own timeout: 444 too, not 200', async () => {
    const { s } = await start({ sendTimeoutMs: Number.POSITIVE_INFINITY, drainTimeoutMs: 50 });
    const { res } = await neverReads(s);
    const closed = new Promise((resolve) => res.once('close', resolve));
    expect(await s.drain()).toEqual({ clean: false, abandonedRequests: 1 });
    await closed;
    // Before: 200, as node before 24.20 and 26.7 says 'finish' for an answer whose socket is
    // destroyed under the write (24.20+ and 26.7+ do not, nodejs/node#64847).
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, CUT)).toBe(1);
    expect(sample(text, CUT.replace('444', '200'))).toBeUndefined();
  });

  it('a drain does not wait past it for such a client, even with a longer drain timeout', async () => {
    const { s } = await start({ sendTimeoutMs: 50, drainTimeoutMs: 600_000 });
    await neverReads(s);
    const drained = await s.drain();
    expect(drained).toEqual({ clean: true, abandonedRequests: 0 });
  });
});

describe('an answer out whole', () => {
  // Node 24.20+ and 26.7+ set writableFinished only as they say 'finish' (nodejs/node#64847): every
  // answer is then still unfinished at 'prefinish', its send timer armed, and 'finish' must disarm
  // it.
  it('leaves no send timer armed: its keep-alive connection outlives sendTimeoutMs, not cut', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let armedAtPrefinish: boolean | undefined;
    let answered!: (seen: { res: ServerResponse; connection: Socket }) => void;
    const closed = new Promise<{ res: ServerResponse; connection: Socket }>((resolve) => {
      answered = resolve;
    });
    const server = createServer((req, res) => {
      boundSend(res, 1_000);
      res.once('prefinish', () => {
        armedAtPrefinish = !res.writableFinished;
      });
      res.once('close', () => answered({ res, connection: req.socket }));
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = connect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port });
    clients.push(client);
    const heard = new Promise<void>((resolve) => {
      let text = '';
      client.on('data', (chunk) => {
        text += chunk;
        if (text.endsWith('\r\n\r\nok')) resolve();
      });
    });
    client.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const { res, connection } = await closed;
    await heard;
    await vi.advanceTimersByTimeAsync(1_000);
    expect({ armedAtPrefinish, cut: sendTimedOut(res, connection), open: !connection.destroyed }).toEqual({
      armedAtPrefinish: FINISHED_ONLY_AT_FINISH,
      cut: false,
      open: true,
    });
    server.closeAllConnections();
    server.close();
  });
});

describe('an answer written raw (client-error.ts) that the client does not take', () => {
  const CHUNKED =
    'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
    `Transfer-Encoding: chunked\r\n\r\n10\r\n${'\0'.repeat(16)}\r\nQQ\r\n`;
  // Before: no send timeout for these: the connection stayed open for good.
  it.each([
    ['a request node cannot parse (400)', 'GARBAGE / HTTP/1.1\r\n\r\n', 'HPE_INVALID_METHOD', undefined],
    ['a CONNECT (501)', 'CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n', 'CONNECT', undefined],
    ['a routed body that failed (400)', CHUNKED, 'HPE_INVALID_CHUNK_SIZE', 1],
  ])(
    '%s: its connection closed once sendTimeoutMs passes, not counted as answered',
    async (_n, request, detail, cut) => {
      const { s } = await start({ sendTimeoutMs: 50 });
      const held = holdNextConnection(s);
      const { socket: c, heard } = listeningClient(s.port);
      c.write(request);
      const { connection } = await held;
      await until(() => connection.destroyed, 'the send timeout to close the connection');
      await until(
        async () => sample((await s.metrics.scrape()).text, 'omni_http_inflight') === 0,
        'its close',
      );
      expect(heard()).toBe('');
      const text = (await s.metrics.scrape()).text;
      expect(sample(text, `omni_http_client_errors_total{detail="${detail}"}`)).toBeUndefined();
      // A routed one is recorded as the send timeout's cut (444), as any other answer it cuts off.
      expect(sample(text, CUT)).toBe(cut);
      expect(await s.drain()).toEqual({ clean: true, abandonedRequests: 0 });
    },
  );
});

// fastify's framework errors (a malformed URL) and node's 'checkExpectation' (the 417) are
// recorded outside fastify's onResponse, on the response's 'finish', which node before 24.20 and
// 26.7 says for an answer its connection was destroyed under, and 24.20+ and 26.7+ do not
// (nodejs/node#64847): recorded then on its 'close'.
describe("an answer written outside fastify's hooks that the client does not take", () => {
  it.each([
    ['a malformed URL (400)', 'GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n', 'request', 400],
    [
      'an unsupported Expect (417)',
      'GET /health HTTP/1.1\r\nHost: x\r\nExpect: x-unsupported\r\n\r\n',
      'checkExpectation',
      417,
    ],
  ])('%s: cut once sendTimeoutMs passes, recorded 444, not counted', async (_n, request, event, status) => {
    const { s } = await start({ sendTimeoutMs: 50 });
    let finishSaid = false;
    s.app.server.once(event, (_req, res: ServerResponse) => {
      res.once('finish', () => {
        finishSaid = true;
      });
    });
    const held = holdNextConnection(s);
    const { socket: c, heard } = listeningClient(s.port);
    c.write(request);
    const { connection } = await held;
    await until(() => connection.destroyed, 'the send timeout to close the connection');
    await until(async () => sample((await s.metrics.scrape()).text, 'omni_http_inflight') === 0, 'its close');
    expect(heard()).toBe('');
    const text = (await s.metrics.scrape()).text;
    const unmatched = (code: number): string =>
      `omni_http_request_duration_seconds_count{route="unmatched",method="GET",status="${code}"}`;
    expect(finishSaid).toBe(!FINISHED_ONLY_AT_FINISH);
    expect([sample(text, unmatched(444)), sample(text, unmatched(status))]).toEqual([1, undefined]);
    expect(text).not.toContain('omni_http_client_errors_total{');
    expect(await s.drain()).toEqual({ clean: true, abandonedRequests: 0 });
  });
});
