/**
 * Large JSON answers are streamed (src/serve/json-answer.ts): the same text as the whole answer,
 * encoded only as the client takes it. Built whole, a JSON answer (~20 bytes per output float)
 * was all in memory at once whatever the client did, and a client that never read it held all
 * of it. Sizes here: 512 rows of 16,384 outputs, ~45 MB of JSON.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { connect } from 'node:net';
import type { Readable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { encodeJson } from '../src/serve/body.js';
import type { ServeHandle, ServeOptions } from '../src/serve/index.js';
import { JSON_CHUNK_FLOATS, jsonChunks } from '../src/serve/json-answer.js';
import { sample } from './fixtures/metrics-text.js';
import { floatsOf, postFloats, postJson, rawExchange } from './fixtures/serve-client.js';
import { HELD_INPUT } from './fixtures/serve-gate-layout.js';
import {
  clients,
  closeServed,
  type Gated,
  type GatedOptions,
  startServed,
} from './fixtures/serve-harness.js';

const IN = 4;
const OUT = 16_384;

afterEach(async () => {
  vi.useRealTimers();
  await closeServed();
});

async function start(sendTimeoutMs?: number): Promise<ServeHandle> {
  return (await startWith({}, sendTimeoutMs === undefined ? {} : { sendTimeoutMs })).s;
}

async function startWith(gated: GatedOptions, options: ServeOptions): Promise<{ g: Gated; s: ServeHandle }> {
  return startServed(
    { inFeatures: IN, outFeatures: OUT, open: true, admission: { requests: 2 }, ...gated },
    options,
  );
}

/** A JSON request of `rows` rows whose first value is `first` (HELD_INPUT: held in the worker). */
function jsonRequest(rows: number, { first = 0, headers = '' } = {}): string {
  const body = JSON.stringify({
    rows: Array.from({ length: rows }, (_, r) => [r === 0 ? first : r, 0, 0, 0]),
  });
  return (
    `POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}` +
    `Content-Length: ${body.length}\r\n\r\n${body}`
  );
}

/** A client connection, its errors (the server cuts some on purpose) ignored. */
function client(s: ServeHandle): Socket {
  const c = connect({ host: '127.0.0.1', port: s.port });
  clients.push(c);
  c.on('error', () => {});
  return c;
}

/** The server's response to the `nth` (1-based) request it hears from now, and its request. */
function nthRequest(s: ServeHandle, nth: number): Promise<{ req: IncomingMessage; res: ServerResponse }> {
  return new Promise((resolve) => {
    let heard = 0;
    const listener = (req: IncomingMessage, res: ServerResponse): void => {
      if (++heard < nth) return;
      s.app.server.off('request', listener);
      resolve({ req, res });
    };
    s.app.server.on('request', listener);
  });
}

/** The stream piped into `res` (its streamed answer), once it is. */
function piped(res: ServerResponse): Promise<Readable> {
  return new Promise((resolve) => res.once('pipe', resolve));
}

/**
 * A client asking for a streamed answer (512 rows), once its first chunk has reached it: the
 * client, the server's response and the stream piped into it.
 */
async function streaming(s: ServeHandle): Promise<{ c: Socket; res: ServerResponse; source: Readable }> {
  const answer = nthRequest(s, 1);
  const c = client(s);
  c.write(jsonRequest(512));
  const { res } = await answer;
  const source = await piped(res);
  await new Promise((resolve) => c.once('data', resolve));
  return { c, res, source };
}

function closed(emitter: {
  destroyed: boolean;
  once(event: 'close', f: () => void): unknown;
}): Promise<void> {
  return emitter.destroyed
    ? Promise.resolve()
    : new Promise((resolve) => emitter.once('close', () => resolve()));
}

/** The histogram count for POST /v1/linear answered (or recorded) with `status`. */
async function recorded(s: ServeHandle, status: number): Promise<number | undefined> {
  const series = `omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="${status}"}`;
  return sample((await s.metrics.scrape()).text, series);
}

describe('jsonChunks', () => {
  it.each([
    ['one short row', 1, 3],
    ['rows filling exactly two chunks', 2 * (JSON_CHUNK_FLOATS / 256), 256],
    ['rows not a whole number of chunks', 2 * (JSON_CHUNK_FLOATS / 256) + 7, 256],
    ['rows wider than a chunk (one row each)', 3, JSON_CHUNK_FLOATS + 5],
  ])('%s: joined, the whole answer JSON.stringify gives', (_name, rows, out) => {
    const y = new Float32Array(rows * out);
    for (let i = 0; i < y.length; i++) y[i] = Math.fround((i % 97) / 7 - 3);
    const special = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0, 1e-45, 3.4e38];
    special.forEach((v, i) => {
      y[(i * 7919) % y.length] = v;
    });
    expect([...jsonChunks(y, rows, out)].join('')).toBe(JSON.stringify(encodeJson(y, rows, out)));
  });
});

describe('a large JSON answer over HTTP', () => {
  it('is sent chunked, and reads as the same rows as its octet-stream answer', async () => {
    const s = await start();
    const url = `http://127.0.0.1:${s.port}`;
    const x = Array.from({ length: 8 * IN }, (_, i) => i / 8);
    const rows = Array.from({ length: 8 }, (_, r) => x.slice(r * IN, (r + 1) * IN));
    const json = await postJson(url, { rows });
    expect(json.status).toBe(200);
    expect(json.headers.get('transfer-encoding')).toBe('chunked');
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(json.headers.get('x-omni-rows')).toBe('8');
    const octet = await postFloats(url, x);
    const floats = floatsOf(octet);
    expect((json.json as { rows: number[][] }).rows.flat()).toEqual(floats);
  });

  it('"more than 65,536 floats is sent chunked" (docs/http.md): exactly 65,536 go whole, more chunked', async () => {
    const s = await start();
    const url = `http://127.0.0.1:${s.port}`;
    const framing = async (rowCount: number) => {
      const a = await postJson(url, { rows: Array.from({ length: rowCount }, () => [0, 0, 0, 0]) });
      expect(a.status).toBe(200);
      return [a.headers.get('transfer-encoding'), a.headers.get('content-length') !== null];
    };
    // 16,384 floats a row.
    expect(await framing(4)).toEqual([null, true]);
    expect(await framing(5)).toEqual(['chunked', false]);
  });

  it('a small one is sent whole, with its Content-Length', async () => {
    const s = await start();
    const json = await postJson(`http://127.0.0.1:${s.port}`, { rows: [[1, 2, 3, 4]] });
    expect(json.status).toBe(200);
    expect(json.headers.get('content-length')).not.toBeNull();
    expect(json.headers.get('transfer-encoding')).toBeNull();
  });

  it('a client that never reads it: the server wrote a small part of it, not all ~45 MB', async () => {
    // The send timeout ends the wait; what the server's side of the connection was handed by
    // then is what it encoded (node counts bytes as they are written to it, sent or not).
    const s = await start(50);
    const serverSide = new Promise<Socket>((resolve) => s.app.server.once('connection', resolve));
    const client = connect({ host: '127.0.0.1', port: s.port });
    clients.push(client);
    client.on('error', () => {});
    client.pause();
    const body = JSON.stringify({ rows: Array.from({ length: 512 }, () => [0, 0, 0, 0]) });
    client.write(
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `Content-Length: ${body.length}\r\n\r\n${body}`,
    );
    const socket = await serverSide;
    if (!socket.destroyed) await new Promise((resolve) => socket.once('close', resolve));
    // 512 x 16,384 outputs of 0..16383: ~45 MB of JSON. Before: all of it, written at once.
    expect(socket.bytesWritten).toBeLessThan(16 * 2 ** 20);
  });
});

describe('a large JSON answer meeting the older machinery', () => {
  it('cut off by the send timeout: recorded as 444, as a whole answer is, not as a client that left', async () => {
    const { s } = await startWith({}, { sendTimeoutMs: 50 });
    const answer = nthRequest(s, 1);
    const c = client(s);
    c.pause();
    c.write(jsonRequest(512));
    const { res } = await answer;
    await closed(res);
    // Before: 499, the stream's response closes without 'finish', and only the drain's cut was asked.
    expect(await recorded(s, 444)).toBe(1);
    expect(await recorded(s, 499)).toBeUndefined();
    expect(await recorded(s, 200)).toBeUndefined();
  });

  it('cut off by the send timeout, the answer queued behind it on that connection is cut off too: 444, not 499', async () => {
    const { s } = await startWith({}, { sendTimeoutMs: 50 });
    const first = nthRequest(s, 1);
    const second = nthRequest(s, 2);
    const c = client(s);
    c.pause();
    c.write(jsonRequest(512) + jsonRequest(1));
    await Promise.all([first.then(({ res }) => closed(res)), second.then(({ res }) => closed(res))]);
    // Before: the queued one was 499, a client that left, where the server closed its connection.
    expect(await recorded(s, 444)).toBe(2);
    expect(await recorded(s, 499)).toBeUndefined();
  });

  it('in flight when a drain times out: cut off, recorded 444 once, its stream stopped', async () => {
    const { s } = await startWith({}, {});
    const { c, res, source } = await streaming(s);
    // The client stops reading: the answer stays in flight, and the drain waits for it.
    c.pause();
    expect(await s.drain({ timeoutMs: 50 })).toEqual({ clean: false, abandonedRequests: 1 });
    await Promise.all([closed(res), closed(source)]);
    // Its head said 200: without the drain's word it would read as a client that left part way.
    expect(await recorded(s, 444)).toBe(1);
    expect(await recorded(s, 200)).toBeUndefined();
    expect(await recorded(s, 499)).toBeUndefined();
  });

  it('its client leaves after its first chunk: the stream is stopped, recorded once with the 200 it was sent', async () => {
    const { s } = await startWith({}, {});
    const { c, res, source } = await streaming(s);
    c.destroy();
    await closed(res);
    // The generator is not run on for a closed connection.
    await closed(source);
    // Before: 499, where a whole answer whose client leaves part way is 200 (node says 'finish').
    expect(await recorded(s, 200)).toBe(1);
    expect(await recorded(s, 499)).toBeUndefined();
  });

  it('queued behind a call still running, its client leaves: 499 (none of it left), the held call too', async () => {
    const { g, s } = await startWith({ threads: 2, admission: { requests: 4 } }, {});
    const first = nthRequest(s, 1);
    const second = nthRequest(s, 2);
    const c = client(s);
    c.write(jsonRequest(1, { first: HELD_INPUT }) + jsonRequest(8));
    const { res: held } = await first;
    const { res } = await second;
    await piped(res);
    c.destroy();
    await Promise.all([closed(held), closed(res)]);
    g.open();
    expect(await recorded(s, 499)).toBe(2);
    expect(await recorded(s, 200)).toBeUndefined();
  });

  it('queued behind a call still running, its turn comes, then its client leaves: the 200 it was sent', async () => {
    const { g, s } = await startWith({ threads: 2, admission: { requests: 4 } }, {});
    const first = nthRequest(s, 1);
    const second = nthRequest(s, 2);
    const c = client(s);
    let heard = '';
    const heads = new Promise<void>((resolve) => {
      c.on('data', (chunk: Buffer) => {
        heard += chunk.toString('latin1');
        if (heard.split('HTTP/1.1 200').length > 2) resolve();
      });
    });
    c.write(jsonRequest(1, { first: HELD_INPUT }) + jsonRequest(512));
    const { res: held } = await first;
    const { res } = await second;
    const source = await piped(res);
    g.open();
    // Its head has reached the client: it was attached to the connection when its turn came.
    await heads;
    c.destroy();
    await Promise.all([closed(held), closed(res), closed(source)]);
    // Taken for still queued, it read as a client that left before any of it was sent.
    expect(await recorded(s, 200)).toBe(2);
    expect(await recorded(s, 499)).toBeUndefined();
  });

  it('pipelined behind a call still running, its send timeout starts with its turn: the connection stays', async () => {
    const sendTimeoutMs = 1_000;
    const { g, s } = await startWith({ threads: 2, admission: { requests: 4 } }, { sendTimeoutMs });
    // The send timer is set once the streamed answer is piped, after this; the calls need no timer.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const connection = new Promise<Socket>((resolve) => s.app.server.once('connection', resolve));
    const second = nthRequest(s, 2);
    const c = client(s);
    const heard: Buffer[] = [];
    c.on('data', (chunk: Buffer) => heard.push(chunk));
    const ended = closed(c);
    c.write(jsonRequest(1, { first: HELD_INPUT }) + jsonRequest(8, { headers: 'Connection: close\r\n' }));
    const server = await connection;
    await piped((await second).res);
    await vi.advanceTimersByTimeAsync(sendTimeoutMs * 2);
    // Before: destroyed, the streamed answer's clock running while it waited its turn, taking
    // the held call's answer with it.
    expect(server.destroyed).toBe(false);
    g.open();
    await ended;
    const text = Buffer.concat(heard).toString('latin1');
    const split = text.indexOf('\r\n\r\n');
    const firstLength = Number(/content-length: (\d+)/i.exec(text.slice(0, split))?.[1]);
    const firstBody = JSON.parse(text.slice(split + 4, split + 4 + firstLength)) as { rows: number[][] };
    expect(firstBody.rows[0]?.[1]).toBe(HELD_INPUT + 1);
    const rest = text.slice(split + 4 + firstLength);
    expect(rest.startsWith('HTTP/1.1 200')).toBe(true);
    const rows = (JSON.parse(unchunk(rest.slice(rest.indexOf('\r\n\r\n') + 4))) as { rows: number[][] }).rows;
    expect(rows.length).toBe(8);
    expect(rows[7]?.[OUT - 1]).toBe(7 + OUT - 1);
  });
});

describe('a large JSON answer to an HTTP/1.0 client', () => {
  it.each([
    ['plain', ''],
    ['asking for keep-alive', 'Connection: keep-alive\r\n'],
    ['listing TE: chunked', 'TE: chunked\r\n'],
  ])('%s: no chunked framing, the whole body, the connection closed after', async (_name, headers) => {
    const { s } = await startWith({}, {});
    const request = jsonRequest(8, { headers }).replace('HTTP/1.1', 'HTTP/1.0');
    const answer = await rawExchange(s.port, [request]);
    expect(answer.status).toBe(200);
    // Before, with TE: chunked: node framed it chunked, which RFC 9112 6.1 forbids for HTTP/1.0.
    expect(answer.head.toLowerCase()).not.toContain('transfer-encoding');
    expect(answer.head.toLowerCase()).toContain('connection: close');
    const rows = (JSON.parse(answer.body) as { rows: number[][] }).rows;
    expect(rows.length).toBe(8);
    expect(rows[7]?.[OUT - 1]).toBe(7 + OUT - 1);
  });
});

/** The body of a chunked message (the whole of it, through its last chunk). */
function unchunk(text: string): string {
  let body = '';
  for (let at = 0; ; ) {
    const line = text.indexOf('\r\n', at);
    const size = Number.parseInt(text.slice(at, line), 16);
    if (size === 0) return body;
    body += text.slice(line + 2, line + 2 + size);
    at = line + 2 + size + 2;
  }
}
