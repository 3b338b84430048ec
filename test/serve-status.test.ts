/**
 * POST /v1/linear against a real server on 127.0.0.1 (port 0) and the gated fixture worker:
 * every status of the table, and which requests reach a worker (the fixture counts its own
 * invocations in shared memory). Capacity is held by parking calls at the gate, never by sleeps.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { MAX_ROWS } from '../src/native/index.js';
import { sample } from './fixtures/metrics-text.js';
import {
  answerThenMalformedRest,
  floatsOf,
  get,
  postBytes,
  postFloats,
  postJson,
  rawExchange,
} from './fixtures/serve-client.js';
import { closeServed } from './fixtures/serve-harness.js';
import {
  closeShared,
  errorOf,
  expected,
  f32,
  IN,
  invocations,
  rows,
  shared,
  start,
} from './fixtures/serve-status-server.js';

afterAll(closeShared);
afterEach(closeServed);

describe('200: rows in, rows out, in the request encoding', () => {
  it('octet-stream: rows from the body length, from ?rows= and from x-omni-rows', async () => {
    const { url, g } = await shared();
    const x = rows(2);
    const reached = await invocations(g, async () => {
      for (const hint of [{}, { query: '?rows=2' }, { headers: { 'x-omni-rows': '2' } }]) {
        const a = await postFloats(url, x, hint);
        expect(a.status).toBe(200);
        expect(a.headers.get('content-type')).toBe('application/octet-stream');
        expect(a.headers.get('x-omni-rows')).toBe('2');
        expect(floatsOf(a)).toEqual(expected(x));
      }
    });
    expect(reached).toBe(3);
  });

  it('an octet body at an odd offset inside a larger buffer is copied, aligned, and answered', async () => {
    const { url } = await shared();
    const x = rows(1, 0.5);
    const backing = new Uint8Array(1 + x.length * 4);
    backing.set(new Uint8Array(new Float32Array(x).buffer), 1);
    const a = await postBytes(url, backing.subarray(1));
    expect(a.status).toBe(200);
    expect(floatsOf(a)).toEqual(expected(x));
  });

  it('JSON: { rows: [[...]] } in, { rows: [[...]] } out', async () => {
    const { url } = await shared();
    const a = await postJson(url, { rows: [rows(1), rows(1, 10)] });
    expect(a.status).toBe(200);
    expect(a.json).toEqual({ rows: [expected(rows(1)), expected(rows(1, 10))] });
  });
});

describe('400: malformed, truncated, unreadable bodies and wrong shapes never reach a worker', () => {
  it.each([
    ['bytes not a whole number of floats', () => ({ body: new Uint8Array(10) }), 'OMNI_ERR_BAD_BODY'],
    ['floats not a whole number of rows', () => ({ body: f32(5) }), 'OMNI_ERR_BAD_BODY'],
    ['an empty body', () => ({ body: new Uint8Array(0) }), 'OMNI_ERR_BAD_BODY'],
    ['?rows= disagreeing with the body', () => ({ body: f32(8), query: '?rows=3' }), 'OMNI_ERR_BAD_BODY'],
    ['?rows=abc', () => ({ body: f32(8), query: '?rows=abc' }), 'OMNI_ERR_BAD_REQUEST'],
    ['?rows=0', () => ({ body: f32(8), query: '?rows=0' }), 'OMNI_ERR_BAD_REQUEST'],
    // Digits only: Number() would read these as the 2 rows the body holds.
    ['?rows=2e0', () => ({ body: f32(8), query: '?rows=2e0' }), 'OMNI_ERR_BAD_REQUEST'],
    ['?rows=2.0', () => ({ body: f32(8), query: '?rows=2.0' }), 'OMNI_ERR_BAD_REQUEST'],
    [
      '?rows= and x-omni-rows disagreeing',
      () => ({ body: f32(8), query: '?rows=2', headers: { 'x-omni-rows': '1' } }),
      'OMNI_ERR_BAD_REQUEST',
    ],
    [
      'a malformed deadline header',
      () => ({ body: f32(4), headers: { 'x-omni-deadline-ms': 'soon' } }),
      'OMNI_ERR_BAD_REQUEST',
    ],
    [
      'a hexadecimal deadline header',
      () => ({ body: f32(4), headers: { 'x-omni-deadline-ms': '0x10' } }),
      'OMNI_ERR_BAD_REQUEST',
    ],
  ])('octet-stream: %s', async (_name, make, code) => {
    const { url, g } = await shared();
    const { body, query, headers } = make() as {
      body: Uint8Array;
      query?: string;
      headers?: Record<string, string>;
    };
    const reached = await invocations(g, async () => {
      const a = await postBytes(url, body, { ...(query ? { query } : {}), ...(headers ? { headers } : {}) });
      expect(a.status).toBe(400);
      expect(errorOf(a).code).toBe(code);
    });
    expect(reached).toBe(0);
  });

  it.each([
    ['malformed JSON', '{"rows": [[1, 2'],
    ['an empty JSON body', ''],
    ['no rows field', {}],
    ['rows not an array', { rows: 3 }],
    ['zero rows', { rows: [] }],
    ['a row of the wrong width', { rows: [[1, 2, 3]] }],
    ['a non-number', { rows: [[1, 2, '3', 4]] }],
    ['a top-level array', [[1, 2, 3, 4]]],
    ['a number float32 cannot hold', '{"rows": [[1, 2, 1e39, 4]]}'],
    ['a number no double can hold', '{"rows": [[1, 2, -1e999, 4]]}'],
  ])('JSON: %s', async (_name, value) => {
    const { url, g } = await shared();
    const reached = await invocations(g, async () => {
      const a = await postJson(url, value);
      expect(a.status).toBe(400);
      expect(errorOf(a).code).toBe('OMNI_ERR_BAD_BODY');
    });
    expect(reached).toBe(0);
  });

  it('a chunked body with a non-hex chunk size: 400 from the parser, and no worker invocation', async () => {
    const { url, s, g } = await shared();
    const before = g.entered();
    const chunk = Buffer.from(new Float32Array([1, 2, 3, 4]).buffer);
    const raw = await rawExchange(s.port, [
      'POST /v1/linear HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n' +
        'Transfer-Encoding: chunked\r\n\r\n',
      '10\r\n',
      chunk,
      '\r\nzz\r\n',
      chunk,
      '\r\n0\r\n\r\n',
    ]);
    expect(raw.status).toBe(400);
    expect(JSON.parse(raw.body)).toMatchObject({
      code: 'OMNI_ERR_BAD_BODY',
      detail: 'HPE_INVALID_CHUNK_SIZE',
    });
    expect(g.entered() - before).toBe(0);
    // The server still serves, and exactly that one good request reaches a worker.
    expect((await postFloats(url, rows(1))).status).toBe(200);
    expect(g.entered() - before).toBe(1);
  });

  it('an HTTP/1.1 request without Host: 400 OMNI_ERR_BAD_REQUEST in JSON, counted, no worker invocation', async () => {
    const { s, g } = await shared();
    const before = g.entered();
    const series = 'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="400"}';
    const counted = sample((await s.metrics.scrape()).text, series) ?? 0;
    const raw = await rawExchange(s.port, [
      'POST /v1/linear HTTP/1.1\r\nConnection: close\r\n' +
        'Content-Type: application/octet-stream\r\nContent-Length: 16\r\n\r\n',
      Buffer.from(new Float32Array(rows(1)).buffer),
    ]);
    // Before: node's own bare 400 (an empty body), never counted.
    expect(raw.status).toBe(400);
    expect(JSON.parse(raw.body)).toMatchObject({ code: 'OMNI_ERR_BAD_REQUEST' });
    expect(sample((await s.metrics.scrape()).text, series)).toBe(counted + 1);
    expect(g.entered() - before).toBe(0);
  });

  // RFC 9112 3.2 asks Host of HTTP/1.1 only: an HTTP/1.0 client (an old proxy, a health
  // checker) may leave it out, and refused with the 1.1 rule it could never be served.
  it('an HTTP/1.0 request without Host is served', async () => {
    const { s, g } = await shared();
    const before = g.entered();
    const raw = await rawExchange(s.port, [
      'POST /v1/linear HTTP/1.0\r\nContent-Type: application/octet-stream\r\nContent-Length: 16\r\n\r\n',
      Buffer.from(new Float32Array(rows(1)).buffer),
    ]);
    expect(raw.status).toBe(200);
    expect(g.entered() - before).toBe(1);
  });

  it('a request with two Host headers: 400 OMNI_ERR_BAD_REQUEST, no worker invocation', async () => {
    const { url, s, g } = await shared();
    const before = g.entered();
    for (const [first, second] of [
      ['Host: a', 'Host: b'],
      ['Host: a', 'host: a'],
    ]) {
      const raw = await rawExchange(s.port, [
        `POST /v1/linear HTTP/1.1\r\n${first}\r\n${second}\r\nConnection: close\r\n` +
          'Content-Type: application/octet-stream\r\nContent-Length: 16\r\n\r\n',
        Buffer.from(new Float32Array(rows(1)).buffer),
      ]);
      // Before: 200, served for the first Host (node drops the others), whichever a proxy used.
      expect(raw.status).toBe(400);
      expect(JSON.parse(raw.body)).toMatchObject({ code: 'OMNI_ERR_BAD_REQUEST' });
    }
    expect(g.entered() - before).toBe(0);
    // One Host, as always, is served.
    expect((await postFloats(url, rows(1))).status).toBe(200);
  });

  it('a request to the run route with two Content-Types that differ: 400 OMNI_ERR_BAD_REQUEST, nothing run', async () => {
    const { s, g } = await shared();
    const before = g.entered();
    for (const [first, second] of [
      ['application/octet-stream', 'application/json'],
      ['application/octet-stream', 'application/octet-stream; charset=utf-8'],
    ]) {
      const raw = await rawExchange(s.port, [
        `POST /v1/linear HTTP/1.1\r\nHost: a\r\nContent-Type: ${first}\r\ncontent-type: ${second}\r\n` +
          'Connection: close\r\nContent-Length: 16\r\n\r\n',
        Buffer.from(new Float32Array(rows(1)).buffer),
      ]);
      // Before: 200, the body read as the first (node drops the others), whichever a proxy used.
      expect([second, raw.status]).toEqual([second, 400]);
      expect(JSON.parse(raw.body)).toMatchObject({ code: 'OMNI_ERR_BAD_REQUEST' });
    }
    expect(g.entered() - before).toBe(0);
    // The same type twice (any case) leaves nothing to disagree on: served.
    const same = await rawExchange(s.port, [
      'POST /v1/linear HTTP/1.1\r\nHost: a\r\nContent-Type: application/octet-stream\r\n' +
        'content-type: Application/Octet-Stream \r\nConnection: close\r\nContent-Length: 16\r\n\r\n',
      Buffer.from(new Float32Array(rows(1)).buffer),
    ]);
    expect(same.status).toBe(200);
  });

  it('a field whose value is "Host" is no second Host line: served', async () => {
    const { s } = await shared();
    const raw = await rawExchange(s.port, [
      'POST /v1/linear HTTP/1.1\r\nHost: a\r\nX-Name: Host\r\nConnection: close\r\n' +
        'Content-Type: application/octet-stream\r\nContent-Length: 16\r\n\r\n',
      Buffer.from(new Float32Array(rows(1)).buffer),
    ]);
    // Counted by every raw entry (names and values alike), that value read as a second Host.
    expect(raw.status).toBe(200);
  });

  it("a malformed URL: 400 OMNI_ERR_BAD_REQUEST (not fastify's own code), counted, no worker invocation", async () => {
    const { s, g } = await shared();
    const before = g.entered();
    const count = async (): Promise<number> => {
      const text = (await s.metrics.scrape()).text;
      const lines = text
        .split('\n')
        .filter((l) => /^omni_http_request_duration_seconds_count\{.*status="400"/.test(l));
      return lines.reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
    };
    const counted = await count();
    for (const path of ['/v1/linear%zz', '/%']) {
      const raw = await rawExchange(s.port, [
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n` +
          'Content-Type: application/octet-stream\r\nContent-Length: 16\r\n\r\n',
        Buffer.alloc(16),
      ]);
      expect(raw.status).toBe(400);
      expect(JSON.parse(raw.body)).toMatchObject({ code: 'OMNI_ERR_BAD_REQUEST' });
    }
    expect(await count()).toBe(counted + 2);
    expect(g.entered() - before).toBe(0);
  });

  it('a body shorter than its Content-Length (the client half-closes): 400, not 413', async () => {
    const { s, g } = await shared();
    const before = g.entered();
    const raw = await rawExchange(
      s.port,
      [
        'POST /v1/linear HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: 64\r\n\r\n',
        Buffer.from(new Float32Array([1, 2, 3, 4]).buffer),
      ],
      true,
    );
    expect(raw.status).toBe(400);
    expect(JSON.parse(raw.body)).toMatchObject({ code: 'OMNI_ERR_BAD_BODY' });
    expect(g.entered() - before).toBe(0);
  });

  // A FIN there is HPE_INVALID_EOF_STATE too, as in a body; no body was begun.
  it.each([
    ['its request line', 'POST /v1/lin'],
    ['its headers', 'POST /v1/linear HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le'],
  ])('a request cut short in %s (the client half-closes): 400 OMNI_ERR_BAD_REQUEST', async (_where, head) => {
    const { s, g } = await shared();
    const before = g.entered();
    const raw = await rawExchange(s.port, [head], true);
    expect(raw.status).toBe(400);
    // Before: OMNI_ERR_BAD_BODY, "the request body could not be read", for a request that sent none.
    expect(JSON.parse(raw.body)).toMatchObject({
      code: 'OMNI_ERR_BAD_REQUEST',
      detail: 'HPE_INVALID_EOF_STATE',
    });
    expect(g.entered() - before).toBe(0);
  });
});

describe('413, 415, 404', () => {
  it('a body over the limit: 413 OMNI_ERR_BODY_TOO_LARGE (octet, chunked and JSON)', async () => {
    const { url, g } = await start({ open: true, admission: { requests: 4 } }, { bodyLimit: 256 });
    const octet = await postBytes(url, f32(128));
    expect(octet.status).toBe(413);
    // The limit in the body: a client can size its uploads without parsing the message.
    expect(errorOf(octet)).toMatchObject({ code: 'OMNI_ERR_BODY_TOO_LARGE', limit: 256 });
    // No Content-Length: the limit is enforced while reading.
    const chunked = await fetch(`${url}/v1/linear`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: new ReadableStream({
        start(controller) {
          for (let i = 0; i < 4; i++) controller.enqueue(f32(32));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(((await chunked.json()) as { code: string }).code).toBe('OMNI_ERR_BODY_TOO_LARGE');
    const json = await postJson(url, { rows: Array.from({ length: 40 }, () => rows(1)) });
    expect(json.status).toBe(413);
    expect(errorOf(json).code).toBe('OMNI_ERR_BODY_TOO_LARGE');
    expect(g.entered()).toBe(0);
  });

  it('a cost (rows) that can never fit the unit ceiling: 413 OMNI_ERR_TOO_LARGE, even when idle', async () => {
    const { url, g } = await start({ open: true, admission: { requests: 4, units: 4 } });
    const a = await postFloats(url, rows(5));
    expect(a.status).toBe(413);
    // What would fit, in the body: the client splits its rows by it, not by the message.
    expect(errorOf(a)).toMatchObject({ code: 'OMNI_ERR_TOO_LARGE', cost: 5, unitCapacity: 4 });
    expect(a.headers.get('retry-after')).toBeNull();
    // Exactly the ceiling fits.
    expect((await postFloats(url, rows(4))).status).toBe(200);
    expect(g.entered()).toBe(1);
  });

  it('more rows than one native call takes: 413 OMNI_ERR_TOO_LARGE without a unit ceiling too', async () => {
    const { url, g } = await start({ open: true, admission: { requests: 4 } }, { bodyLimit: 64 * 2 ** 20 });
    const reached = await invocations(g, async () => {
      const a = await postBytes(url, f32((MAX_ROWS + 1) * IN));
      expect(a.status).toBe(413);
      expect(errorOf(a)).toMatchObject({
        code: 'OMNI_ERR_TOO_LARGE',
        cost: MAX_ROWS + 1,
        unitCapacity: MAX_ROWS,
      });
    });
    expect(reached).toBe(0);
  });

  it('an answer sent before the body was read closes the connection: one request, one answer', async () => {
    const { s, g } = await shared();
    const before = g.entered();
    // A 415, answered before the body was read; the rest of that body is not a chunk size.
    const text = await answerThenMalformedRest(
      s.port,
      'POST /v1/linear HTTP/1.1',
      'Content-Encoding: gzip\r\n',
    );
    expect(text.match(/HTTP\/1\.1 \d{3} /g)).toEqual(['HTTP/1.1 415 ']);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(g.entered() - before).toBe(0);
  });

  it('an unsupported Content-Type or JSON not in UTF-8: 415; an unknown route: 404', async () => {
    const { url, g } = await shared();
    const reached = await invocations(g, async () => {
      const text = await postBytes(url, Buffer.from('1 2 3 4'), { type: 'text/plain' });
      expect(text.status).toBe(415);
      expect(errorOf(text).code).toBe('OMNI_ERR_UNSUPPORTED_MEDIA_TYPE');
      // Bodies this route would misread are refused, not decoded as if plain.
      const gzip = await postBytes(url, f32(4), { headers: { 'content-encoding': 'gzip' } });
      expect(gzip.status).toBe(415);
      expect(errorOf(gzip).code).toBe('OMNI_ERR_UNSUPPORTED_MEDIA_TYPE');
      const utf16 = await postBytes(url, Buffer.from('{"rows":[[1,2,3,4]]}'), {
        type: 'application/json; charset=utf-16',
      });
      expect(utf16.status).toBe(415);
      // Without a charset parameter, UTF-16 and UTF-32 (BOM or not) are told by their bytes.
      const text16 = '{"rows":[[1,2,3,4]]}';
      const le32 = Buffer.alloc(text16.length * 4);
      for (let i = 0; i < text16.length; i++) le32.writeUInt32LE(text16.charCodeAt(i), i * 4);
      for (const body of [
        Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text16, 'utf16le')]),
        Buffer.from(text16, 'utf16le'),
        Buffer.from(text16, 'utf16le').swap16(),
        // UTF-16BE with its byte order mark: only the first byte (0xFE) tells it.
        Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text16, 'utf16le').swap16()]),
        le32,
        // Latin-1 (or any bytes that are not UTF-8), told by its bytes too: a non-ASCII byte in a
        // string it does not use, or trailing (a no-break space), was decoded as if UTF-8.
        Buffer.from('{"rows":[[1,2,3,4]],"note":"caf\u00e9"}', 'latin1'),
        Buffer.from('{"rows":[[1,2,3,4]]}\u00a0', 'latin1'),
      ]) {
        const answer = await postBytes(url, body, { type: 'application/json' });
        expect([answer.status, errorOf(answer).code]).toEqual([415, 'OMNI_ERR_UNSUPPORTED_MEDIA_TYPE']);
      }
      // A UTF-8 byte order mark is still UTF-8.
      const bom8 = await postBytes(
        url,
        Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text16)]),
        {
          type: 'application/json',
        },
      );
      expect(bom8.status).toBe(200);
      const missing = await get(url, '/v2/nothing');
      expect(missing.status).toBe(404);
      expect(errorOf(missing).code).toBe('OMNI_ERR_NOT_FOUND');
    });
    expect(reached).toBe(1); // the UTF-8 one with a byte order mark
  });
});
