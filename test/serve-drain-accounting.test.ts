/**
 * A drain's accounting: every request the server received is in the metrics by the time
 * drain() (or close()) resolves, those the drain cut off (444) included, and the in-flight
 * gauge reads 0. An operator, or a process that exports a last snapshot, reads them right after
 * the await. The requests are held open by their clients (a stalled upload, an answer never
 * read, one pipelined behind it), seen arriving through the server's own gauge and events. The
 * same holds on every path a request takes apart from the plain one: a connection handed over
 * for a CONNECT, a 100 Continue withheld, an Upgrade node answers as any other request, HTTP/1.0,
 * a body node could not parse, a URL fastify answers before routing, the other address of host
 * 'localhost'.
 */
import dns from 'node:dns';
import type { ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { type DrainResult, type ServeHandle, type ServeOptions, serve } from '../src/serve/index.js';
import { CUT_OFF_STATUS } from '../src/serve/metrics.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { clients, closeServed, gatedForTest } from './fixtures/serve-harness.js';

const IN = 4;
/** 256 rows of 16,384 floats: a 16 MiB answer, far more than loopback's socket buffers hold. */
const OUT = 16_384;
const ROWS = 256;

afterEach(closeServed);

async function start(options: ServeOptions = {}): Promise<ServeHandle> {
  const g = await gatedForTest({ inFeatures: IN, outFeatures: OUT, open: true, admission: { requests: 2 } });
  return serve(g.lr, { port: 0, sendTimeoutMs: Number.POSITIVE_INFINITY, ...options });
}

function client(s: ServeHandle, host = '127.0.0.1'): Socket {
  const c = connect({ host, port: s.port });
  clients.push(c);
  c.on('error', () => {}); // the drain cuts it off on purpose
  return c;
}

function head(length: number, fields = '', version = '1.1'): string {
  return (
    `POST /v1/linear HTTP/${version}\r\nHost: x\r\nContent-Type: application/octet-stream\r\n${fields}` +
    `Content-Length: ${length}\r\n\r\n`
  );
}

/** Headers and part of the body: the request is in flight, waiting for the rest. */
function stalled(fields = '', version = '1.1'): string {
  return `${head(64, fields, version)}${'\0'.repeat(16)}`;
}

/**
 * Resolves once the first answer on the server is handed to its connection: 16 MiB the client
 * never reads (unread()), so that the requests pipelined behind it wait, unattached.
 */
function firstAnswerWritten(s: ServeHandle): Promise<void> {
  return new Promise<void>((resolve) => {
    let seen = 0;
    s.app.server.on('request', (_req, res: ServerResponse) => {
      if (++seen === 1) res.once('prefinish', () => resolve());
    });
  });
}

/** A request for 16 MiB on a connection whose client reads none of it. */
function unread(c: Socket): void {
  c.pause();
  const body = Buffer.alloc(ROWS * IN * 4);
  c.write(head(body.length));
  c.write(body);
}

const series = (status: number): string =>
  `omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="${status}"}`;

async function inflight(s: ServeHandle): Promise<number | undefined> {
  return sample((await s.metrics.scrape()).text, 'omni_http_inflight');
}

describe('a drain that cuts requests off', () => {
  it('has recorded them (444) by the time it resolves: a stalled upload', async () => {
    const s = await start();
    client(s).write(stalled());
    await until(async () => (await inflight(s)) === 1, 'the upload');
    const drained = s.drain({ timeoutMs: 600_000 });
    s.expireDrain();
    expect(await drained).toEqual({ clean: false, abandonedRequests: 1 });
    // Read at once: before, the 444 came a turn of the event loop after drain() resolved.
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, series(CUT_OFF_STATUS))).toBe(1);
    expect(sample(text, 'omni_http_inflight')).toBe(0);
  });

  it('has recorded them by the time close() resolves: an answer never read, one queued behind it', async () => {
    const s = await start();
    // The first answer is handed to its connection (16 MiB, never read), the second waits
    // behind it, unattached (pipelined-close.ts closes it with the connection).
    const queued = firstAnswerWritten(s);
    const c = client(s);
    unread(c);
    c.write(head(IN * 4));
    c.write(Buffer.alloc(IN * 4));
    await queued;
    await until(async () => (await inflight(s)) === 2, 'the pipelined request');
    const closing = s.close();
    s.expireDrain();
    expect(await closing).toEqual({ clean: false, abandonedRequests: 2 });
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, series(CUT_OFF_STATUS))).toBe(2);
    expect(sample(text, series(200))).toBeUndefined();
    expect(sample(text, 'omni_http_inflight')).toBe(0);
  });
});

/** Cuts everything off at once and reads the metrics right after the drain resolved. */
async function cutOff(s: ServeHandle, requests: number): Promise<void> {
  const drained = s.drain({ timeoutMs: 600_000 });
  s.expireDrain();
  expect(await drained).toEqual({ clean: false, abandonedRequests: requests });
  const text = (await s.metrics.scrape()).text;
  expect(sample(text, series(CUT_OFF_STATUS))).toBe(requests);
  expect(sample(text, 'omni_http_inflight')).toBe(0);
}

/**
 * The unread answer and an unrouted answer (`status`) queued behind it are both in flight; the
 * drain cuts both off and records both 444, the queued one under route 'unmatched', never as
 * `status`. Returns the metrics text after the drain.
 */
async function expectUnmatchedCutOff(s: ServeHandle, status: number): Promise<string> {
  expect(await inflight(s)).toBe(2);
  const drained = s.drain({ timeoutMs: 600_000 });
  s.expireDrain();
  expect(await drained).toEqual({ clean: false, abandonedRequests: 2 });
  const text = (await s.metrics.scrape()).text;
  const unmatched = (answered: number): string =>
    `omni_http_request_duration_seconds_count{route="unmatched",method="GET",status="${answered}"}`;
  expect([sample(text, unmatched(status)), sample(text, unmatched(CUT_OFF_STATUS))]).toEqual([undefined, 1]);
  expect(sample(text, series(CUT_OFF_STATUS))).toBe(1);
  expect(sample(text, 'omni_http_inflight')).toBe(0);
  return text;
}

describe('a drain that cuts requests off on the paths apart from the plain one', () => {
  it('a connection handed over for a CONNECT pipelined behind an unread answer and a queued request', async () => {
    const s = await start();
    const written = firstAnswerWritten(s);
    const c = client(s);
    unread(c);
    c.write(head(IN * 4));
    c.write(Buffer.alloc(IN * 4));
    // node hands the connection over (it no longer closes it); the 501 waits for the answers.
    const handedOver = new Promise<void>((resolve) => s.app.server.once('connect', () => resolve()));
    c.write('CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n');
    await Promise.all([written, handedOver]);
    // The 501 owed is in flight too (before: 2, the CONNECT not counted).
    await until(async () => (await inflight(s)) === 3, 'the pipelined request');
    const drained = s.drain({ timeoutMs: 600_000 });
    s.expireDrain();
    // Before: 2 abandoned, the CONNECT left out, though cut off unanswered.
    expect(await drained).toEqual({ clean: false, abandonedRequests: 3 });
    const text = (await s.metrics.scrape()).text;
    // A CONNECT is no routed request: in omni_http_client_errors_total once answered, never in
    // the histogram; cut off, it is counted in abandonedRequests alone.
    expect(sample(text, series(CUT_OFF_STATUS))).toBe(2);
    expect(sample(text, 'omni_http_client_errors_total{detail="CONNECT"}')).toBeUndefined();
    expect(sample(text, 'omni_http_inflight')).toBe(0);
  });

  it('a request whose 100 Continue is withheld, queued behind an unread answer', async () => {
    const s = await start();
    const written = firstAnswerWritten(s);
    const c = client(s);
    unread(c);
    c.write(head(IN * 4, 'Expect: 100-continue\r\n'));
    await written;
    await until(async () => (await inflight(s)) === 2, 'the request expecting 100');
    await cutOff(s, 2);
  });

  it('stalled uploads asking for an Upgrade (answered as any other request) and in HTTP/1.0', async () => {
    const s = await start();
    client(s).write(stalled('Connection: Upgrade\r\nUpgrade: websocket\r\n'));
    client(s).write(stalled('', '1.0'));
    await until(async () => (await inflight(s)) === 2, 'the uploads');
    await cutOff(s, 2);
  });

  it('a body node could not parse, queued behind an unread answer (its 400 waits its turn)', async () => {
    const s = await start();
    const written = firstAnswerWritten(s);
    const c = client(s);
    unread(c);
    const failed = new Promise<void>((resolve) => s.app.server.once('clientError', () => resolve()));
    c.write(
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
        'Transfer-Encoding: chunked\r\n\r\n10\r\n',
    );
    c.write(Buffer.alloc(16));
    c.write('\r\nQQ\r\n'); // not a chunk size
    await Promise.all([written, failed]);
    await cutOff(s, 2);
  });

  it('a malformed URL (answered before routing, without hooks) queued behind an unread answer', async () => {
    const s = await start();
    const written = firstAnswerWritten(s);
    // After fastify's listener, which answers it at once (its answer waits behind the first).
    const routed = new Promise<void>((resolve) =>
      s.app.server.on('request', (req) => {
        if (req.url === '/%zz') resolve();
      }),
    );
    const c = client(s);
    unread(c);
    c.write('GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n');
    await Promise.all([written, routed]);
    // Before: recorded 400 as soon as answered, never in flight, nor in the drain's count.
    await expectUnmatchedCutOff(s, 400);
  });

  it('an unsupported Expect (its 417 waits its turn) queued behind an unread answer', async () => {
    const s = await start();
    const written = firstAnswerWritten(s);
    const expectation = new Promise<void>((resolve) =>
      s.app.server.once('checkExpectation', () => resolve()),
    );
    const c = client(s);
    unread(c);
    c.write('GET /health HTTP/1.1\r\nHost: x\r\nExpect: x-unsupported\r\n\r\n');
    await Promise.all([written, expectation]);
    // Before: never in flight, nor in the drain's count, nor recorded once cut off (a malformed
    // URL in its place is all three).
    const text = await expectUnmatchedCutOff(s, 417);
    expect(sample(text, 'omni_http_client_errors_total{detail="EXPECTATION_FAILED"}')).toBeUndefined();
  });

  it('a drain started as a request arrives, before the server counts it: answered 503, in the metrics', async () => {
    const s = await start();
    let drained: Promise<DrainResult> | undefined;
    // Before fastify's listener: the drain sees nothing in flight, then the request is counted.
    s.app.server.prependListener('request', () => {
      drained ??= s.drain({ timeoutMs: 0 });
    });
    client(s).write(stalled());
    await until(() => drained !== undefined, 'the request');
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, series(503))).toBe(1);
    expect(sample(text, 'omni_http_inflight')).toBe(0);
  });

  it('headers still arriving are no request: not waited for, not counted', async () => {
    const s = await start();
    const connection = new Promise<Socket>((resolve) => s.app.server.once('connection', resolve));
    client(s).write('POST /v1/linear HTTP/1.1\r\nHost: x\r\n');
    const socket = await connection;
    await until(() => socket.bytesRead > 0, 'the first header lines');
    // No timeout to wait out: a drain that took them for a request would never end.
    expect(await s.drain({ timeoutMs: Number.POSITIVE_INFINITY })).toEqual({
      clean: true,
      abandonedRequests: 0,
    });
    const text = (await s.metrics.scrape()).text;
    expect(text).not.toContain('omni_http_request_duration_seconds_count');
    expect(sample(text, 'omni_http_inflight')).toBe(0);
  });
});

const hasIpv6Loopback = Object.values(networkInterfaces()).some((list) =>
  list?.some((a) => a.internal && a.family === 'IPv6' && a.address === '::1'),
);

describe.skipIf(!hasIpv6Loopback)("host 'localhost' on both loopbacks", () => {
  const lookup = dns.lookup;
  afterEach(() => {
    dns.lookup = lookup;
  });

  it('a drain that cuts off a stalled upload on each address has recorded both', async () => {
    // This machine's localhost may be IPv4 only: the lookup fastify makes for every address of
    // the host answers both loopbacks (as serve-localhost.test.ts does).
    dns.lookup = ((host: string, options: unknown, callback?: unknown) => {
      const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
      if (host === 'localhost' && all && typeof callback === 'function') {
        const both = [
          { address: '127.0.0.1', family: 4 },
          { address: '::1', family: 6 },
        ];
        process.nextTick(() => (callback as (err: null, addresses: typeof both) => void)(null, both));
        return;
      }
      return (lookup as (...args: unknown[]) => void)(host, options, callback);
    }) as typeof dns.lookup;
    const s = await start({ host: 'localhost' });
    client(s, '::1').write(stalled());
    client(s, '127.0.0.1').write(stalled());
    await until(async () => (await inflight(s)) === 2, 'both uploads');
    await cutOff(s, 2);
  });
});
