/**
 * POST /v1/linear bodies and headers beyond serve-status.test.ts: JSON rows that are too wide,
 * a rows hint that contradicts a JSON body, `null` for a body, the charset and Content-Encoding
 * spellings that mean UTF-8 and identity, a client deadline that shortens the server's (and
 * cannot lengthen the runtime's own when the server has none), a server deadline of Infinity
 * (none, over the runtime's own), and a
 * worker answer of the wrong shape. Nothing malformed reaches a worker.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type Served, type ServeHandle, type ServeOptions, serve } from '../src/serve/index.js';
import { until } from './fixtures/runtime-harness.js';
import { get, postBytes, postJson } from './fixtures/serve-client.js';
import { ENTERED, expectedRow } from './fixtures/serve-gate-layout.js';
import {
  closeServed,
  type Gated,
  gatedForTest,
  serveForTest,
  sharedServed,
  startServed,
} from './fixtures/serve-harness.js';

const IN = 4;
const OUT = 3;
const ROW = [1, 2, 3, 4];

afterEach(closeServed);

// One open server for the tests that hold no capacity; each counts worker calls as a difference.
const openServer = sharedServed({ inFeatures: IN, outFeatures: OUT, open: true, admission: { requests: 4 } });
async function shared(): Promise<{ g: Gated; url: string }> {
  const { g, s } = await openServer();
  return { g, url: s.address };
}

afterAll(openServer.close);

async function reached(g: Gated, fn: () => Promise<void>): Promise<number> {
  const before = g.entered();
  await fn();
  return g.entered() - before;
}

describe('JSON bodies', () => {
  it.each([
    ['a row wider than inFeatures', { rows: [[1, 2, 3, 4, 5]] }, {}],
    ['a second row wider than inFeatures', { rows: [ROW, [...ROW, 5]] }, {}],
    ['x-omni-rows disagreeing with the rows', { rows: [ROW] }, { 'x-omni-rows': '2' }],
    ['x-omni-rows saying fewer rows than the body has', { rows: [ROW, ROW] }, { 'x-omni-rows': '1' }],
    ['null', 'null', {}],
  ])('%s: 400 OMNI_ERR_BAD_BODY, no worker call', async (_name, value, headers) => {
    const { g, url } = await shared();
    const calls = await reached(g, async () => {
      const a = await postJson(url, value, headers);
      expect(a.status).toBe(400);
      expect(a.json?.code).toBe('OMNI_ERR_BAD_BODY');
    });
    expect(calls).toBe(0);
  });

  it('many empty rows for a wide layer: 400 OMNI_ERR_BAD_BODY, the rows never sized from their count', async () => {
    // 300,000 rows of 16,384 floats would be a 19.7 GB input from a 0.9 MB body (more than a
    // typed array holds): a malformed row must be found before anything is sized by the count.
    const g = await gatedForTest({
      inFeatures: 16_384,
      outFeatures: 1,
      open: true,
      admission: { requests: 1 },
    });
    const s = await serveForTest(g.lr);
    const calls = await reached(g, async () => {
      const a = await postJson(s.address, `{"rows":[${Array(300_000).fill('[]').join(',')}]}`);
      expect(a.status).toBe(400);
      expect(a.json?.code).toBe('OMNI_ERR_BAD_BODY');
    });
    expect(calls).toBe(0);
  });

  it('?rows= disagreeing with a JSON body: 400; agreeing with it: 200', async () => {
    const { g, url } = await shared();
    const calls = await reached(g, async () => {
      for (const [query, status] of [
        ['?rows=2', 400],
        ['?rows=1', 200],
      ] as const) {
        const a = await postBytes(url, Buffer.from(JSON.stringify({ rows: [ROW] })), {
          query,
          type: 'application/json',
        });
        expect(a.status).toBe(status);
        if (status === 400) expect(a.json?.code).toBe('OMNI_ERR_BAD_BODY');
        else expect(a.json).toEqual({ rows: [expectedRow(ROW, OUT)] });
      }
    });
    expect(calls).toBe(1);
  });
});

/**
 * A server over a runtime whose default deadline is 50 ms, its only thread held by a call without
 * a deadline (`held`), so that a request waits behind it. Waiting instead for the request's own
 * call to reach the gate raced its 50 ms: a worker that took longer to start it skipped it.
 */
async function heldBehind(
  options: ServeOptions,
): Promise<{ g: Gated; s: ServeHandle; held: Promise<Float32Array> }> {
  const { g, s } = await startServed(
    { inFeatures: IN, outFeatures: OUT, threads: 1, deadlineMs: 50, admission: { requests: 4 } },
    options,
  );
  const held = g.lr.run(Float32Array.from(ROW), { deadlineMs: Number.POSITIVE_INFINITY });
  await g.reach(ENTERED, 1);
  return { g, s, held };
}

describe('headers', () => {
  it('charset=utf8 and a Content-Encoding of Identity (any case, padded, listed) are served', async () => {
    const { url } = await shared();
    const json = Buffer.from(JSON.stringify({ rows: [ROW] }));
    const utf8 = await postBytes(url, json, { type: 'application/json; charset=utf8' });
    expect(utf8.status).toBe(200);
    expect(utf8.json).toEqual({ rows: [expectedRow(ROW, OUT)] });
    const identity = await postBytes(url, json, {
      type: 'application/json',
      headers: { 'content-encoding': ' Identity ' },
    });
    expect(identity.status).toBe(200);
    // A list whose elements are identity or empty (RFC 9110 5.6.1) is no coding either: these
    // were refused 415, "send it uncompressed", for a body that was.
    for (const encoding of ['', 'identity,', ', identity', 'identity, IDENTITY']) {
      const listed = await postBytes(url, json, {
        type: 'application/json',
        headers: { 'content-encoding': encoding },
      });
      expect([encoding, listed.status]).toEqual([encoding, 200]);
    }
    const coded = await postBytes(url, json, {
      type: 'application/json',
      headers: { 'content-encoding': 'identity, gzip' },
    });
    expect(coded.status).toBe(415);
    expect(coded.json).toMatchObject({ code: 'OMNI_ERR_UNSUPPORTED_MEDIA_TYPE' });
  });

  it("a client deadline cannot lengthen the runtime's own default deadline the server uses", async () => {
    const { g, s, held } = await heldBehind({}); // no deadlineMs: the runtime's 50 ms
    const longer = postJson(s.address, { rows: [ROW] }, { 'x-omni-deadline-ms': '600000' });
    // Queued behind the held call, where it stays until the gate opens.
    await until(() => g.lr.report().queued === 1, '`longer` queued');
    // Dispatched after `longer`, with the runtime's deadline: once it has missed it, so has `longer`.
    const plain = await postJson(s.address, { rows: [ROW] });
    expect(plain.status).toBe(504);
    g.open();
    const a = await longer;
    expect(a.status).toBe(504);
    expect(a.json?.code).toBe('OMNI_ERR_DEADLINE');
    expect(await held).toHaveLength(OUT);
  });

  // serve() refused deadlineMs: Infinity, which Runtime and LinearRuntime take as "none".
  it("deadlineMs: Infinity is none, even over the runtime's own default deadline", async () => {
    const { g, s, held } = await heldBehind({ deadlineMs: Number.POSITIVE_INFINITY });
    const unbounded = postJson(s.address, { rows: [ROW] });
    await until(() => g.lr.report().queued === 1, 'the request queued');
    // Run after the request, with the runtime's 50 ms: once it has missed it, a request given
    // the runtime's default would have too.
    expect((await Promise.allSettled([g.lr.run(Float32Array.from(ROW))]))[0]).toMatchObject({
      status: 'rejected',
      reason: { code: 'OMNI_ERR_DEADLINE' },
    });
    g.open();
    const a = await unbounded;
    expect(a.status).toBe(200);
    expect(a.json).toEqual({ rows: [expectedRow(ROW, OUT)] });
    expect(await held).toHaveLength(OUT);
  });

  it('with deadlineMs: Infinity a client deadline still shortens it: 504', async () => {
    const { s } = await startServed(
      { inFeatures: IN, outFeatures: OUT, threads: 1, admission: { requests: 2 } },
      { deadlineMs: Number.POSITIVE_INFINITY },
    );
    // The gate stays shut: without the client's 50 ms this would never end.
    const a = await postJson(s.address, { rows: [ROW] }, { 'x-omni-deadline-ms': '50' });
    expect(a.status).toBe(504);
    expect(a.json?.code).toBe('OMNI_ERR_DEADLINE');
  });

  it('a client deadline shorter than the server one shortens it: 504', async () => {
    const { s } = await startServed(
      { inFeatures: IN, outFeatures: OUT, threads: 1, admission: { requests: 2 } },
      { deadlineMs: 600_000 },
    );
    // The gate stays shut: with the server's 10-minute deadline this would outlast the test.
    const a = await postJson(s.address, { rows: [ROW] }, { 'x-omni-deadline-ms': '50' });
    expect(a.status).toBe(504);
    expect(a.json?.code).toBe('OMNI_ERR_DEADLINE');
  });
});

describe('the worker answer', () => {
  it('a result of the wrong length: 500 OMNI_ERR_TASK_FAILED, not a short answer', async () => {
    let closed = false;
    const wrong: Served = {
      inFeatures: IN,
      outFeatures: OUT,
      // One row in, one float short of a row out.
      run: async () => new Float32Array(OUT - 1),
      report: () => {
        throw new Error('not used by this test');
      },
      close: async () => {
        closed = true;
        return { clean: true, abandoned: 0 };
      },
    };
    const s = await serve(wrong, { port: 0 });
    const a = await postJson(s.address, { rows: [ROW] });
    expect(a.status).toBe(500);
    expect(a.json?.code).toBe('OMNI_ERR_TASK_FAILED');
    expect((await get(s.address, '/v2/none')).status).toBe(404);
    await s.close();
    expect(closed).toBe(true);
  });
});
