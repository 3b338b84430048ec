/**
 * POST /v1/linear request headers: a client deadline that cannot lengthen the server's, the
 * charset and Content-Encoding spellings served, a zero deadline, an Expect header other than
 * 100-continue (417) and oversized headers (431).
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { get, postBytes, postFloats, rawExchange } from './fixtures/serve-client.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import { closeServed } from './fixtures/serve-harness.js';
import { closeShared, errorOf, expected, rows, start } from './fixtures/serve-status-server.js';

afterAll(closeShared);
afterEach(closeServed);

describe('headers', () => {
  it('a client deadline longer than the server one does not lengthen it: 504 at the server deadline', async () => {
    const { g, url } = await start({ threads: 1, admission: { requests: 2 } }, { deadlineMs: 300 });
    // The only thread is held by a call without a deadline, so the request waits behind it.
    // Waiting instead for the request's own call to reach the gate raced its 300 ms: a worker
    // thread that started it later skipped it.
    const held = g.lr.run(Float32Array.from(rows(1)), { deadlineMs: Number.POSITIVE_INFINITY });
    await g.reach(ENTERED, 1);
    const pending = postFloats(url, rows(1), { headers: { 'x-omni-deadline-ms': '600000' } });
    // Lengthened, this would wait 10 minutes: the test's own timeout fails it.
    const a = await pending;
    expect(a.status).toBe(504);
    // Its capacity is still held (queued behind the held call, until it is skipped).
    expect((await get(url, '/health')).json).toMatchObject({ depth: 2 });
    g.open();
    expect(Array.from(await held)).toEqual(expected(rows(1)));
  });

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

  // '-1e-400' reads as -0 by Number(): neither it nor '-5' is a time left to wait.
  it('a negative deadline header (-5, -1e-400) is a bad request, nothing reaching a worker', async () => {
    const { g, url } = await start({ open: true, admission: { requests: 4 } });
    for (const deadline of ['-5', '-1e-400']) {
      const a = await postFloats(url, rows(1), { headers: { 'x-omni-deadline-ms': deadline } });
      expect([deadline, a.status]).toEqual([deadline, 400]);
      expect(errorOf(a)).toMatchObject({ code: 'OMNI_ERR_BAD_REQUEST' });
    }
    expect(g.entered()).toBe(0);
  });

  it('a deadline header not in decimal (hex, binary, Infinity) is a bad request', async () => {
    const { g, url } = await start({ open: true, admission: { requests: 4 } });
    for (const deadline of ['0x10', '0b11', 'Infinity']) {
      // Read by Number() alone, each was a deadline (16 ms, 3 ms, none) and the call was served.
      const a = await postFloats(url, rows(1), { headers: { 'x-omni-deadline-ms': deadline } });
      expect([deadline, a.status]).toEqual([deadline, 400]);
      expect(errorOf(a)).toMatchObject({ code: 'OMNI_ERR_BAD_REQUEST' });
    }
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
