/**
 * POST /v1/linear against a real server on 127.0.0.1 (port 0) and the gated fixture worker:
 * every status of the table, and which requests reach a worker (the fixture counts its own
 * invocations in shared memory). Capacity is held by parking calls at the gate, never by sleeps.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { MAX_ROWS } from '../src/native/index.js';
import { type ServeHandle, type ServeOptions, serve } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import {
  type Answer,
  answerThenMalformedRest,
  floatsOf,
  get,
  postBytes,
  postFloats,
  postJson,
  rawExchange,
} from './fixtures/serve-client.js';
import {
  ENTERED,
  expectedRow,
  FAIL_FATAL,
  FAIL_NATIVE,
  FAIL_NATIVE_CODE,
  FAIL_PLAIN,
  FINISHED,
} from './fixtures/serve-gate-layout.js';
import { type Gated, type GatedOptions, startGated } from './fixtures/serve-harness.js';

const IN = 4;
const OUT = 3;

const servers: ServeHandle[] = [];
const gates: Gated[] = [];

interface Started {
  readonly g: Gated;
  readonly s: ServeHandle;
  readonly url: string;
}

// One server with its gate open serves every test that holds no capacity and leaves the runtime
// as it found it; such tests count the worker invocations they cause as a difference.
let openServer: Promise<Started> | undefined;
function shared(): Promise<Started> {
  openServer ??= (async () => {
    const g = await startGated({ inFeatures: IN, outFeatures: OUT, open: true, admission: { requests: 8 } });
    const s = await serve(g.lr, { port: 0 });
    return { g, s, url: s.address };
  })();
  return openServer;
}

afterAll(async () => {
  await (await openServer)?.s.close();
});

/** Runs `fn` and returns how many calls reached the worker meanwhile. */
async function invocations(g: Gated, fn: () => Promise<void>): Promise<number> {
  const before = g.entered();
  await fn();
  return g.entered() - before;
}

afterEach(async () => {
  // Whatever a test left parked at its gate must end before its server can drain.
  for (const g of gates.splice(0)) g.open();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start(
  gated: GatedOptions,
  options: ServeOptions = {},
): Promise<{ g: Gated; s: ServeHandle; url: string }> {
  const g = await startGated({ inFeatures: IN, outFeatures: OUT, ...gated });
  gates.push(g);
  const s = await serve(g.lr, { port: 0, ...options });
  servers.push(s);
  return { g, s, url: s.address };
}

function rows(n: number, first = 1): number[] {
  return Array.from({ length: n * IN }, (_, i) => first + i);
}

function expected(values: number[]): number[] {
  const out: number[] = [];
  for (let r = 0; r < values.length / IN; r++)
    out.push(...expectedRow(values.slice(r * IN, (r + 1) * IN), OUT));
  return out;
}

function errorOf(a: Answer): {
  code?: unknown;
  reason?: unknown;
  nativeCode?: unknown;
  state?: unknown;
  detail?: unknown;
} {
  expect(a.headers.get('content-type')).toMatch(/^application\/json/);
  return a.json ?? {};
}

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
});

describe('413, 415, 404', () => {
  it('a body over the limit: 413 OMNI_ERR_BODY_TOO_LARGE (octet, chunked and JSON)', async () => {
    const { url, g } = await start({ open: true, admission: { requests: 4 } }, { bodyLimit: 256 });
    const octet = await postBytes(url, f32(128));
    expect(octet.status).toBe(413);
    expect(errorOf(octet).code).toBe('OMNI_ERR_BODY_TOO_LARGE');
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
    expect(errorOf(a).code).toBe('OMNI_ERR_TOO_LARGE');
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
      expect(errorOf(a).code).toBe('OMNI_ERR_TOO_LARGE');
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
        le32,
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

describe('503: admission refusals, answered at once, never reaching a worker', () => {
  it('a burst beyond capacity: exactly the excess is refused, with Retry-After', async () => {
    const capacity = 2;
    const excess = 5;
    const { url, g } = await start({ threads: capacity, admission: { requests: capacity } });
    const held = Array.from({ length: capacity }, (_, i) => postFloats(url, rows(1, i)));
    await g.reach(ENTERED, capacity);
    const burst = await Promise.all(Array.from({ length: excess }, () => postFloats(url, rows(1))));
    expect(burst.map((a) => a.status)).toEqual(Array(excess).fill(503));
    for (const a of burst) {
      expect(a.headers.get('retry-after')).toBe('1');
      expect(errorOf(a)).toMatchObject({ code: 'OMNI_ERR_REJECTED', reason: 'requests' });
    }
    expect(g.entered()).toBe(capacity);
    const health = await get(url, '/health');
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ state: 'ready', depth: capacity, capacity, rejected: excess });
    g.open();
    expect((await Promise.all(held)).map((a) => a.status)).toEqual([200, 200]);
    // Only the admitted calls ever ran.
    expect(g.entered()).toBe(capacity);
  });

  it('the unit bound refuses with reason "units"', async () => {
    const { url, g } = await start({ admission: { requests: 4, units: 4 } });
    const held = postFloats(url, rows(3));
    await g.reach(ENTERED, 1);
    const a = await postFloats(url, rows(2));
    expect(a.status).toBe(503);
    expect(a.headers.get('retry-after')).toBe('1');
    expect(errorOf(a)).toMatchObject({ code: 'OMNI_ERR_REJECTED', reason: 'units' });
    g.open();
    expect((await held).status).toBe(200);
    expect(g.entered()).toBe(1);
  });

  it('a stopped runtime: 503 OMNI_ERR_UNAVAILABLE, and /health says so', async () => {
    const { url, g } = await start({ open: true, admission: { requests: 4 } });
    await g.lr.close();
    const a = await postFloats(url, rows(1));
    expect(a.status).toBe(503);
    expect(errorOf(a)).toMatchObject({ code: 'OMNI_ERR_UNAVAILABLE', state: 'stopped' });
    expect(a.headers.get('retry-after')).toBeNull();
    const health = await get(url, '/health');
    expect(health.status).toBe(503);
    expect(health.json).toMatchObject({ state: 'stopped' });
    expect(g.entered()).toBe(0);
  });
});

describe('504: admitted but past its deadline; the capacity stays held until the work ends', () => {
  it('a call queued behind a slow gated one', async () => {
    const { url, g } = await start({ threads: 1, admission: { requests: 2 } });
    const slow = postFloats(url, rows(1));
    await g.reach(ENTERED, 1);
    const late = await postFloats(url, rows(1), { headers: { 'x-omni-deadline-ms': '1' } });
    expect(late.status).toBe(504);
    expect(errorOf(late).code).toBe('OMNI_ERR_DEADLINE');
    // Both calls still hold their capacity: the late one is queued behind the gate.
    expect((await get(url, '/health')).json).toMatchObject({ depth: 2 });
    g.open();
    expect((await slow).status).toBe(200);
    await untilDepth(url, 0);
    // The late call was skipped by the worker, not run.
    expect(g.entered()).toBe(1);
  });

  it('the gated call itself: 504, depth 1 until the gate opens and the work ends', async () => {
    const { url, g } = await start({ threads: 1, admission: { requests: 2 } }, { deadlineMs: 1000 });
    const pending = postFloats(url, rows(1));
    // The call is in the worker, parked at the gate, before its deadline passes.
    await g.reach(ENTERED, 1);
    const a = await pending;
    expect(a.status).toBe(504);
    expect(errorOf(a).code).toBe('OMNI_ERR_DEADLINE');
    expect((await get(url, '/health')).json).toMatchObject({ state: 'ready', depth: 1 });
    expect(Atomics.load(g.words, FINISHED)).toBe(0);
    g.open();
    await g.reach(FINISHED, 1);
    await untilDepth(url, 0);
  });

  it('a deadline header of 2^31 ms or more is honoured, not answered 504 after 1 ms', async () => {
    const { url, g } = await start({ threads: 1, admission: { requests: 2 } });
    const long = postFloats(url, rows(1), { headers: { 'x-omni-deadline-ms': String(2 ** 31) } });
    await g.reach(ENTERED, 1);
    // A 1 ms deadline set after the long one's timer: a long deadline cut to 1 ms would have
    // fired first (same duration, earlier), so by this 504 it would have been counted.
    const clock = await postFloats(url, rows(1), { headers: { 'x-omni-deadline-ms': '1' } });
    expect(clock.status).toBe(504);
    expect(g.lr.report()).toMatchObject({ deadline: 1, depth: 2 });
    g.open();
    const answer = await long;
    expect(answer.status).toBe(200);
    expect(floatsOf(answer)).toEqual(expected(rows(1)));
  });
});

describe('500: the worker failed', () => {
  it('a native error carries its nativeCode', async () => {
    const { url } = await shared();
    const a = await postFloats(url, [FAIL_NATIVE, 0, 0, 0]);
    expect(a.status).toBe(500);
    expect(errorOf(a)).toMatchObject({ code: 'OMNI_ERR_NATIVE', nativeCode: FAIL_NATIVE_CODE });
    // Not sticky: the next call succeeds.
    expect((await postFloats(url, rows(1))).status).toBe(200);
  });

  it('an uncoded worker error: 500 OMNI_ERR_TASK_FAILED', async () => {
    const { url } = await shared();
    const a = await postFloats(url, [FAIL_PLAIN, 0, 0, 0]);
    expect(a.status).toBe(500);
    expect(errorOf(a).code).toBe('OMNI_ERR_TASK_FAILED');
  });

  it('a sticky native error fails the runtime: later calls and /health answer 503', async () => {
    const { url } = await start({ open: true, admission: { requests: 4 } });
    const a = await postFloats(url, [FAIL_FATAL, 0, 0, 0]);
    expect(a.status).toBe(500);
    expect(errorOf(a)).toMatchObject({ code: 'OMNI_ERR_NATIVE', nativeCode: FAIL_NATIVE_CODE });
    const after = await postFloats(url, rows(1));
    expect(after.status).toBe(503);
    expect(errorOf(after)).toMatchObject({ code: 'OMNI_ERR_UNAVAILABLE', state: 'failed' });
    const health = await get(url, '/health');
    expect(health.status).toBe(503);
    expect(health.json).toMatchObject({ state: 'failed' });
  });
});

function f32(n: number): Uint8Array {
  return new Uint8Array(new Float32Array(n).fill(1).buffer);
}

/** Polls /health (bounded) until depth reaches `depth`: the work, not the caller, ends it. */
function untilDepth(url: string, depth: number): Promise<void> {
  return until(async () => (await get(url, '/health')).json?.depth === depth, `/health depth ${depth}`);
}

describe('headers', () => {
  it('a client deadline longer than the server one does not lengthen it: 504 at the server deadline', async () => {
    const { g, url } = await start({ threads: 1, admission: { requests: 2 } }, { deadlineMs: 300 });
    const pending = postFloats(url, rows(1), { headers: { 'x-omni-deadline-ms': '600000' } });
    await g.reach(ENTERED, 1);
    // Lengthened, this would wait 10 minutes: the test's own timeout fails it.
    const a = await pending;
    expect(a.status).toBe(504);
    expect((await get(url, '/health')).json).toMatchObject({ depth: 1 });
  }, 20_000);

  it('JSON with charset=UTF-8 (any case), Content-Encoding identity, octets with any charset are served', async () => {
    const { url } = await start({ open: true, admission: { requests: 4 } });
    const a = await postBytes(url, Buffer.from(JSON.stringify({ rows: [rows(1)] })), {
      type: 'application/json; Charset="UTF-8"',
      headers: { 'content-encoding': 'identity' },
    });
    expect(a.status).toBe(200);
    expect(a.json).toEqual({ rows: [expected(rows(1))] });
    // A charset means nothing to a binary body: ignored there.
    const octets = await postBytes(url, Buffer.from(new Float32Array(rows(1)).buffer), {
      type: 'application/octet-stream; charset=utf-16',
    });
    expect(octets.status).toBe(200);
  });

  it('a deadline header of 0 is a bad request (the header), not a runtime argument error', async () => {
    const { g, url } = await start({ open: true, admission: { requests: 4 } });
    const a = await postFloats(url, rows(1), { headers: { 'x-omni-deadline-ms': '0' } });
    expect(a.status).toBe(400);
    expect(errorOf(a)).toMatchObject({ code: 'OMNI_ERR_BAD_REQUEST' });
    expect(g.lr.report()).toMatchObject({ invalid: 0 });
    expect(g.entered()).toBe(0);
  });

  it('an Expect header other than 100-continue: 417 in JSON, nothing reaches a worker', async () => {
    const { g, url } = await start({ open: true, admission: { requests: 4 } });
    const a = await rawExchange(Number(new URL(url).port), [
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\nContent-Type: application/octet-stream\r\n' +
        'Content-Length: 0\r\n\r\n',
    ]);
    expect(a.status).toBe(417);
    expect(a.head).toMatch(/content-type: application\/json/i);
    expect(JSON.parse(a.body)).toMatchObject({ code: 'OMNI_ERR_EXPECTATION_FAILED' });
    expect(g.entered()).toBe(0);
  });

  it('oversized request headers: 431 OMNI_ERR_HEADERS_TOO_LARGE, nothing reaches a worker', async () => {
    const { g, url } = await start({ open: true, admission: { requests: 4 } });
    const a = await rawExchange(Number(new URL(url).port), [
      `POST /v1/linear HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\nContent-Length: 0\r\n\r\n`,
    ]);
    expect(a.status).toBe(431);
    expect(JSON.parse(a.body)).toMatchObject({ code: 'OMNI_ERR_HEADERS_TOO_LARGE' });
    expect(g.entered()).toBe(0);
  });
});
