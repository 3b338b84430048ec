/**
 * POST /v1/linear answers from the server's side: 503 for admission refusals and a stopped
 * runtime (never reaching a worker), 504 past a deadline with the capacity held until the work
 * ends, and 500 when the worker fails. Capacity is held by parking calls at the gate, never by
 * sleeps.
 */
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { LinearRuntime } from '../src/linear/linear-runtime.js';
import { floatsOf, get, postFloats, type RawAnswer, rawExchange } from './fixtures/serve-client.js';
import {
  ENTERED,
  FAIL_FATAL,
  FAIL_NATIVE,
  FAIL_NATIVE_CODE,
  FAIL_PLAIN,
  FINISHED,
} from './fixtures/serve-gate-layout.js';
import { closeServed } from './fixtures/serve-harness.js';
import {
  closeShared,
  errorOf,
  expected,
  rows,
  shared,
  start,
  untilDepth,
} from './fixtures/serve-status-server.js';

afterAll(closeShared);
afterEach(closeServed);

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
    // The server's deadline runs on a fake clock, made due once the call is parked at the gate.
    // A real one (it was 1000 ms) raced the worker thread, which skips a call whose deadline
    // passed before it started it; the worker's clock stays real, and has 10 minutes for that.
    const { s, url, g } = await start({ threads: 1, admission: { requests: 2 } }, { deadlineMs: 600_000 });
    const body = Buffer.from(new Float32Array(rows(1)).buffer);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let pending: Promise<RawAnswer>;
    try {
      // node:net, not fetch: fetch's own timeouts would be on the fake clock too.
      pending = rawExchange(s.port, [
        'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
          `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
        body,
      ]);
      await g.reach(ENTERED, 1);
      vi.advanceTimersByTime(600_000);
    } finally {
      vi.useRealTimers();
    }
    const a = await pending;
    expect(a.status).toBe(504);
    expect(JSON.parse(a.body)).toMatchObject({ code: 'OMNI_ERR_DEADLINE' });
    expect((await get(url, '/health')).json).toMatchObject({ state: 'ready', depth: 1 });
    expect(Atomics.load(g.words, FINISHED)).toBe(0);
    g.open();
    await g.reach(FINISHED, 1);
    await untilDepth(url, 0);
  });

  // '1e-400' names a number > 0, as the header asks, that Number() reads as 0: it was refused
  // as a malformed header (400) though a long one that reads as Infinity is honoured.
  it.each([
    ['1e-400', '1e-400'],
    ['0.(400 zeros)1', `0.${'0'.repeat(400)}1`],
  ])(
    'a deadline header too small for a double, %s: the shortest deadline (504), not a 400',
    async (_name, value) => {
      // Spied before serve() takes the method: the shortest deadline there is, past at once (a
      // whole millisecond is time a fast call could use).
      const run = vi.spyOn(LinearRuntime.prototype, 'run');
      try {
        const { url, g } = await start({ threads: 1, admission: { requests: 2 } });
        const a = await postFloats(url, rows(1), { headers: { 'x-omni-deadline-ms': value } });
        expect(a.status).toBe(504);
        expect(errorOf(a).code).toBe('OMNI_ERR_DEADLINE');
        expect(g.lr.report()).toMatchObject({ deadline: 1 });
        expect(run.mock.calls.map(([, options]) => options?.deadlineMs)).toEqual([Number.MIN_VALUE]);
      } finally {
        run.mockRestore();
      }
    },
  );

  // Read as Infinity, it asks for no deadline, and a server without one leaves the call to the
  // runtime's own (no deadlineMs passed): Infinity passed on would have lifted that one.
  it("a deadline header too large for a double (1e400): the runtime's own deadline, not none", async () => {
    const run = vi.spyOn(LinearRuntime.prototype, 'run');
    try {
      const { url } = await start({ threads: 1, open: true });
      const a = await postFloats(url, rows(1), { headers: { 'x-omni-deadline-ms': '1e400' } });
      expect(a.status).toBe(200);
      expect(run.mock.calls.map(([, options]) => options?.deadlineMs)).toEqual([undefined]);
    } finally {
      run.mockRestore();
    }
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
