/**
 * Claims of docs/http.md, docs/limits.md and the README about serve() that no other test pins
 * (its defaults, its address), one `it` each, the page's words in its name.
 */
import { readFileSync } from 'node:fs';
import { Server as NetServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LinearRuntime } from '../src/index.js';
import { packageRoot } from '../src/paths.js';
import {
  DEFAULT_BODY_LIMIT,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_SEND_TIMEOUT_MS,
  serve,
} from '../src/serve/index.js';
import { codeOf, until } from './fixtures/runtime-harness.js';
import { get, postBytes, postFloats, rawExchange } from './fixtures/serve-client.js';
import {
  closeServed,
  gatedForTest,
  listeningClient,
  serveForTest,
  startServed,
} from './fixtures/serve-harness.js';

afterEach(closeServed);

describe('docs/http.md: serve() options', () => {
  it('"bodyLimit (bytes, default 8 MiB)", "drainTimeoutMs (default 10 s)", request and send 300 s', () => {
    expect(DEFAULT_BODY_LIMIT).toBe(8 * 1024 * 1024);
    expect(DEFAULT_DRAIN_TIMEOUT_MS).toBe(10_000);
    expect(DEFAULT_REQUEST_TIMEOUT_MS).toBe(300_000);
    expect(DEFAULT_SEND_TIMEOUT_MS).toBe(300_000);
  });

  it('"bodyLimit (bytes, default 8 MiB)": a body of 8 MiB is taken, one byte more is a 413', async () => {
    // 32 floats a row: 8 MiB is 65,536 rows, the most one call takes, so only the size can refuse.
    const { s } = await startServed({ inFeatures: 32, outFeatures: 1, open: true });
    const over = await postBytes(s.address, new Uint8Array(DEFAULT_BODY_LIMIT + 1));
    expect([over.status, over.json?.code]).toEqual([413, 'OMNI_ERR_BODY_TOO_LARGE']);
    const whole = await postBytes(s.address, new Uint8Array(DEFAULT_BODY_LIMIT));
    expect(whole.status).toBe(200);
    expect(whole.bytes.byteLength).toBe((DEFAULT_BODY_LIMIT / 4 / 32) * 4);
  });

  it('"host (default 127.0.0.1)": the handle\'s host and address say so', async () => {
    const { s } = await startServed({ open: true });
    expect(s.host).toBe('127.0.0.1');
    expect(s.port).toBeGreaterThan(0);
    expect(s.address).toBe(`http://127.0.0.1:${s.port}`);
  });

  it('"port (8080; ...)": serve() without a port listens on 8080', async () => {
    // Nothing is bound: the listen is refused as if 8080 were taken, and what it asked for is kept.
    const asked: unknown[] = [];
    vi.spyOn(NetServer.prototype, 'listen').mockImplementation(function (this: NetServer, options: unknown) {
      asked.push(options);
      const taken = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
      process.nextTick(() => this.emit('error', taken));
      return this;
    } as NetServer['listen']);
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2 });
    try {
      expect(await codeOf(serve(g.lr))).toBe('EADDRINUSE');
    } finally {
      vi.restoreAllMocks();
    }
    expect(asked).toEqual([expect.objectContaining({ host: '127.0.0.1', port: 8080 })]);
  });

  it('"a kept-alive connection is closed after 72 s idle (fastify\'s default)"; checks "every quarter of the headers\' (15 s by default)"', async () => {
    const { s } = await startServed({ open: true });
    expect(s.app.server.keepAliveTimeout).toBe(72_000);
    // Set by serve() (node reads it at construction; @types/node does not declare the property).
    expect((s.app.server as { connectionsCheckingInterval?: number }).connectionsCheckingInterval).toBe(
      15_000,
    );
  });
});

/** A one-row octet-stream POST whose head has `lines` header lines, its Content-Type the last. */
function headOf(lines: number, filler = (i: number) => `x${i}: 1`): string {
  const head = ['Host: x', 'Connection: close', 'Content-Length: 16'];
  for (let i = 0; head.length < lines - 1; i++) head.push(filler(i));
  return `POST /v1/linear HTTP/1.1\r\n${[...head, 'Content-Type: application/octet-stream'].join('\r\n')}\r\n\r\n`;
}

describe('docs/limits.md: HTTP clients', () => {
  it('"A request of more than 1,000 header lines ... is a 431 on every Node", counted as any other answer', async () => {
    const { g, s } = await startServed({ inFeatures: 4, outFeatures: 2, open: true });
    const whole = await rawExchange(s.port, [headOf(1_000), new Uint8Array(16)]);
    expect(whole.status).toBe(200);
    // Node 20 (and 22, 24, 26 before CVE-2026-58044's fix) dropped the lines after 1,000 unseen,
    // the Content-Type among them (a 415); since the fix node refused them itself, uncounted.
    // 5,000 short lines are within node's 16 KiB, which counts names and values only.
    for (const lines of [1_001, 5_000]) {
      const refused = await rawExchange(s.port, [headOf(lines, () => 'a:'), new Uint8Array(16)]);
      expect([lines, refused.status, JSON.parse(refused.body).code]).toEqual([
        lines,
        431,
        'OMNI_ERR_HEADERS_TOO_LARGE',
      ]);
    }
    expect(g.lr.report()).toMatchObject({ completed: 1 });
    const text = (await s.metrics.scrape()).text;
    expect(text).toContain(
      'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="431"} 2',
    );
    // "closing its connection when its body was not read": a body left unread closes it; a GET's
    // connection goes on to the request behind it.
    const many = Array.from({ length: 1_001 }, () => 'a:').join('\r\n');
    const unread = await rawExchange(s.port, [
      `POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n${many}\r\n` +
        'Content-Length: 16\r\n\r\n',
    ]);
    expect([unread.status, /^connection: close$/im.test(unread.head)]).toEqual([431, true]);
    const kept = await rawExchange(s.port, [
      `GET /health HTTP/1.1\r\nHost: x\r\n${many}\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    ]);
    expect([kept.status, /\}HTTP\/1\.1 200 /.test(kept.body)]).toEqual([431, true]);
  });

  it('"Capacity is not held by any of these: a call is admitted only once its body is read"', async () => {
    const { g, s } = await startServed({
      inFeatures: 4,
      outFeatures: 2,
      open: true,
      admission: { requests: 1 },
    });
    // An upload stalled 4 bytes short of its one row: in flight, its body unread.
    const { socket } = listeningClient(s.port);
    socket.write('POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n');
    socket.write(`Content-Length: 16\r\n\r\n${'\0'.repeat(12)}`);
    const inflight = async () => Buffer.from((await get(s.address, '/metrics')).bytes).toString('utf8');
    // Two: the /metrics request counts itself.
    await until(
      async () => /^omni_http_inflight 2$/m.test(await inflight()),
      'the stalled upload to be in flight',
    );
    expect(g.lr.report()).toMatchObject({ depth: 0, rejected: 0 });
    // The only request slot is free: another client's call is served meanwhile.
    expect((await postFloats(s.address, [1, 2, 3, 4])).status).toBe(200);
  });

  it('"headers ... over node\'s 16 KiB a 431": it counts the URL, names and values, not the rest of the head', async () => {
    const { s } = await startServed({ inFeatures: 4, outFeatures: 2, open: true });
    // 10 bytes of URL, 77 of the five names and the other four values: X-Big's value brings 16,383.
    const big = (n: number) => headOf(5, () => `X-Big: ${'a'.repeat(n)}`);
    expect(big(16_296).length).toBeGreaterThan(16 * 1024);
    expect((await rawExchange(s.port, [big(16_296), new Uint8Array(16)])).status).toBe(200);
    const over = await rawExchange(s.port, [big(16_297), new Uint8Array(16)]);
    expect([over.status, JSON.parse(over.body).code]).toEqual([431, 'OMNI_ERR_HEADERS_TOO_LARGE']);
  });
});

describe('README: Over HTTP', () => {
  it('"a 4 -> 2 layer ... (seeded weights, so the same numbers on the CPU fixture)": the curl answer shown', async () => {
    const lines = readFileSync(join(packageRoot, 'README.md'), 'utf8').split('\n');
    const at = lines.findIndex((line) => line.startsWith('curl -s localhost:8080/v1/linear'));
    const body = /-d '([^']*)'/.exec(lines[at] ?? '')?.[1];
    const shown = lines[at + 1]?.replace(/^# /, '');
    expect([body, shown]).toEqual([expect.stringContaining('rows'), expect.stringContaining('rows')]);
    // `serve --in-features 4 --out-features 2` runs these weights: seeded, seed 1.
    const lr = await LinearRuntime.start({ backend: 'fixture', threads: 1, inFeatures: 4, outFeatures: 2 });
    const s = await serveForTest(lr);
    const answer = await fetch(`${s.address}/v1/linear`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body ?? '',
    });
    expect([answer.status, await answer.text()]).toEqual([200, shown]);
  });
});
