/**
 * The rest of drain.ts's contract: a drain runs once, expireDrain() also cuts short the wait
 * for requests, a timeout that passes while only runtime work is left is not clean, and a client
 * stalled mid-upload is cut off (docs/limits.md: HTTP). In-flight work is held at the fixture
 * worker's gate; a stalled upload is seen through the server's in-flight gauge.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Served, type ServeHandle, serve } from '../src/serve/index.js';
import { CUT_OFF_STATUS } from '../src/serve/metrics.js';
import { sample } from './fixtures/metrics-text.js';
import { codeOf, until } from './fixtures/runtime-harness.js';
import { postFloats } from './fixtures/serve-client.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import {
  clients,
  closeServed,
  type Gated,
  gatedForTest,
  holdNextConnection,
} from './fixtures/serve-harness.js';

afterEach(closeServed);

async function start(): Promise<{ g: Gated; s: ServeHandle }> {
  const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, admission: { requests: 2 } });
  return { g, s: await serve(g.lr, { port: 0 }) };
}

/** A request answered with anything, or its connection lost. */
function settled(answer: Promise<{ status: number }>): Promise<number | string> {
  return answer.then(
    (a) => a.status,
    () => 'connection closed',
  );
}

/** The gated runtime behind a hand-written Served whose close() is `close` (the test closes it). */
function withClose(g: Gated, close: Served['close']): Served {
  return {
    run: (x, options) => g.lr.run(x, options),
    report: () => g.lr.report(),
    inFeatures: g.lr.inFeatures,
    outFeatures: g.lr.outFeatures,
    close,
  };
}

/**
 * g's runtime, served, whose close() is held: `closeCalled` resolves once the drain calls it,
 * and `finish` ends that close() with the result given.
 */
function withHeldClose(g: Gated): {
  served: Served;
  closeCalled: Promise<void>;
  finish: (result: { clean: boolean; abandoned: number }) => void;
} {
  let finishClose: (result: { clean: boolean; abandoned: number }) => void = () => {};
  let closing: () => void = () => {};
  const closeCalled = new Promise<void>((resolve) => {
    closing = resolve;
  });
  const served = withClose(g, () => {
    closing();
    return new Promise((resolve) => {
      finishClose = resolve;
    });
  });
  return { served, closeCalled, finish: (result) => finishClose(result) };
}

describe('drain', () => {
  it('runs once: a second drain() or close() shares the first one, timeout included', async () => {
    const { g, s } = await start();
    const inflight = postFloats(s.address, [1, 2, 3, 4]);
    await g.reach(ENTERED, 1);
    const first = s.drain({ timeoutMs: 600_000 });
    // Its 1 ms timeout must not start a second drain that would abandon the request.
    const second = s.drain({ timeoutMs: 1 });
    expect(second).toBe(first);
    expect(s.close()).toBe(first);
    // Set after the second drain's 1 ms timer would have been: that timer would fire first.
    expect(await codeOf(g.lr.run(new Float32Array(4), { deadlineMs: 1 }))).toBe('OMNI_ERR_DEADLINE');
    g.open();
    expect((await inflight).status).toBe(200);
    expect(await first).toEqual({ clean: true, abandonedRequests: 0 });
  });

  it('expireDrain() while requests are in flight abandons them at once, whatever the timeout', async () => {
    const { g, s } = await start();
    const stuck = settled(postFloats(s.address, [1, 2, 3, 4]));
    await g.reach(ENTERED, 1);
    const drained = s.drain({ timeoutMs: 600_000 });
    s.expireDrain(); // the gate stays shut: only expiring the wait can end this drain
    expect(await drained).toEqual({ clean: false, abandonedRequests: 1 });
    expect(g.lr.report()).toMatchObject({ state: 'stopped', depth: 0 });
    expect([503, 'connection closed']).toContain(await stuck);
  });

  // The signal handler's second SIGINT calls it, but any caller may: with no drain begun there
  // is no wait to cut short, and the runtime the server owns must not be closed under it.
  it('expireDrain() before any drain has nothing to cut short: the server keeps serving', async () => {
    const { g, s } = await start();
    g.open();
    s.expireDrain();
    expect(g.lr.report().state).toBe('ready');
    expect((await postFloats(s.address, [1, 2, 3, 4])).status).toBe(200);
    expect(await s.drain()).toEqual({ clean: true, abandonedRequests: 0 });
  });

  it('expireDrain() while the runtime closes: a close() that rejects a second call is not an unhandled rejection', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, open: true });
    // A hand-written runtime that refuses a second close(), as many libraries do.
    let finish: (result: { clean: boolean; abandoned: number }) => void = () => {};
    let closes = 0;
    const served = withClose(g, () =>
      ++closes === 1
        ? new Promise((resolve) => {
            finish = resolve;
          })
        : Promise.reject(new Error('already closing')),
    );
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      const s = await serve(served, { port: 0 });
      const drained = s.drain(); // nothing in flight: the drain closes the runtime at once
      expect(closes).toBe(1);
      s.expireDrain(); // a second signal: the drain forces the runtime's close again
      expect(closes).toBe(2);
      // Unhandled rejections are reported once the microtasks have run.
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
      finish({ clean: true, abandoned: 0 });
      expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
    } finally {
      process.removeListener('unhandledRejection', onUnhandled);
      await g.lr.close();
    }
  });

  it('expireDrain() while the runtime closes: a close() that throws at a second call does not throw', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, open: true });
    let finish: (result: { clean: boolean; abandoned: number }) => void = () => {};
    let closes = 0;
    const served = withClose(g, () => {
      if (++closes > 1) throw new Error('already closing');
      return new Promise((resolve) => {
        finish = resolve;
      });
    });
    try {
      const s = await serve(served, { port: 0 });
      const drained = s.drain(); // nothing in flight: the drain closes the runtime at once
      // A second signal's handler (the caller's) must not throw: in a signal listener that is
      // an uncaught exception, the end of the process before the drain ends.
      expect(() => s.expireDrain()).not.toThrow();
      expect(closes).toBe(2);
      finish({ clean: true, abandoned: 0 });
      expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
    } finally {
      await g.lr.close();
    }
  });

  it('a request that arrives while the runtime closes and is cut off at the end: abandoned, not clean', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, open: true });
    const { served, closeCalled, finish } = withHeldClose(g);
    try {
      const s = await serve(served, { port: 0, sendTimeoutMs: Number.POSITIVE_INFINITY });
      // A kept-alive connection open before the drain (it stops accepting new ones), whose
      // client takes nothing the server writes.
      const held = holdNextConnection(s);
      const socket = connect({ host: '127.0.0.1', port: s.port });
      clients.push(socket);
      socket.on('error', () => {}); // the drain cuts it off on purpose
      const { connection } = await held;
      const drained = s.drain({ timeoutMs: 600_000 });
      await closeCalled; // nothing was in flight: the drain went on to close the runtime
      // Answered as while serving (a draining server reads no new body: a 404 comes at once),
      // its answer held in this process while the runtime closes.
      socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n');
      await until(() => connection.writableLength > 0, 'the answer to be written, and held');
      finish({ clean: true, abandoned: 0 });
      // Before: { clean: true, abandonedRequests: 0 }, with the cut-off 444 in the metrics.
      expect(await drained).toEqual({ clean: false, abandonedRequests: 1 });
      const text = (await s.metrics.scrape()).text;
      expect(
        sample(
          text,
          `omni_http_request_duration_seconds_count{route="/metrics",method="GET",status="${CUT_OFF_STATUS}"}`,
        ),
      ).toBe(1);
    } finally {
      await g.lr.close();
    }
  });

  it('a request node cannot parse that arrives while the runtime closes, its 400 held in this process: abandoned, not counted', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, open: true });
    const { served, closeCalled, finish } = withHeldClose(g);
    try {
      const s = await serve(served, { port: 0, sendTimeoutMs: Number.POSITIVE_INFINITY });
      // A connection open before the drain whose client takes nothing the server writes.
      const held = holdNextConnection(s);
      const socket = connect({ host: '127.0.0.1', port: s.port });
      clients.push(socket);
      socket.on('error', () => {}); // the drain cuts it off on purpose
      const { connection } = await held;
      const drained = s.drain({ timeoutMs: 600_000 });
      await closeCalled; // nothing was in flight: the drain went on to close the runtime
      socket.write('GARBAGE / HTTP/1.1\r\n\r\n');
      await until(() => connection.writableLength > 0, 'the 400 to be written, and held');
      finish({ clean: true, abandoned: 0 });
      // Owed after the wait ended, and cut off unanswered: the drain is neither clean nor silent.
      expect(await drained).toEqual({ clean: false, abandonedRequests: 1 });
      const text = (await s.metrics.scrape()).text;
      expect(sample(text, 'omni_http_client_errors_total{detail="HPE_INVALID_METHOD"}')).toBeUndefined();
    } finally {
      await g.lr.close();
    }
  });

  it.each([
    ['rejects', () => Promise.reject(new Error('cannot close'))],
    ['resolves nothing', () => Promise.resolve(undefined)],
    // Hand-written JavaScript that is not async: the drain stopped half way (a rejected drain,
    // its connections and server never closed, so a process that waits for them never exits).
    [
      'throws',
      () => {
        throw new Error('cannot close');
      },
    ],
    ['returns nothing', () => undefined],
  ])('a runtime whose close() %s: the drain still ends, not clean', async (_, close) => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, open: true });
    try {
      const s = await serve(withClose(g, close as unknown as Served['close']), { port: 0 });
      expect(await s.drain()).toEqual({ clean: false, abandonedRequests: 0 });
      expect(s.state).toBe('closed');
    } finally {
      await g.lr.close();
    }
  });

  // Steps 3 and 4 share one timeout: given the whole of it again, a drain whose requests took
  // most of it waited up to twice as long as asked. The clock is the test's: Date.now() alone.
  it("the runtime's close is given what the wait for requests left of the timeout", async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, admission: { requests: 2 } });
    const given: (number | undefined)[] = [];
    let now = Date.now();
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      const s = await serve(
        withClose(g, (options) => {
          given.push(options?.timeoutMs);
          clock.mockRestore();
          return g.lr.close(options);
        }),
        { port: 0 },
      );
      const held = postFloats(s.address, [1, 2, 3, 4]);
      await g.reach(ENTERED, 1);
      const drained = s.drain({ timeoutMs: 60_000 });
      now += 45_000;
      g.open();
      expect((await held).status).toBe(200);
      expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
      expect(given).toEqual([15_000]);
    } finally {
      clock.mockRestore();
    }
  });

  it('a timeout that passes while work whose caller heard 504 still runs: not clean', async () => {
    const { g, s } = await start();
    // The only thread is held at the gate by a call without a deadline (no request of the
    // server's); the 504's call waits behind it. Waiting instead for the 504's own call to reach
    // the gate raced its deadline: a worker thread that started it late skipped it.
    const held = codeOf(g.lr.run(new Float32Array(4), { deadlineMs: Number.POSITIVE_INFINITY }));
    await g.reach(ENTERED, 1);
    const late = postFloats(s.address, [1, 2, 3, 4], { headers: { 'x-omni-deadline-ms': '50' } });
    expect((await late).status).toBe(504);
    // Its capacity is still held: it is given back only when the call is skipped.
    expect(g.lr.report()).toMatchObject({ depth: 2, deadline: 1 });
    // No request is in flight; the work is held at the gate until the runtime abandons it.
    expect(await s.drain({ timeoutMs: 50 })).toEqual({ clean: false, abandonedRequests: 0 });
    expect(g.lr.report()).toMatchObject({ state: 'stopped', depth: 0 });
    expect(await held).toBe('OMNI_ERR_WORKER_EXITED'); // abandoned: its thread was terminated
  });

  it('a client stalled mid-upload holds the drain until its timeout, then is cut off', async () => {
    const { g, s } = await start();
    const socket = connect({ host: '127.0.0.1', port: s.port });
    clients.push(socket);
    socket.on('error', () => {}); // the server cuts it off on purpose
    const closed = new Promise<string>((resolve) => {
      const heard: Buffer[] = [];
      socket.on('data', (c: Buffer) => heard.push(c));
      socket.once('close', () => resolve(Buffer.concat(heard).toString('utf8')));
    });
    socket.write(
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 64\r\n\r\n',
    );
    socket.write(Buffer.from(new Float32Array([1, 2, 3, 4]).buffer));
    // Bounded poll of the server's own gauge: the request has arrived and waits for its body.
    await until(
      async () => sample((await s.metrics.scrape()).text, 'omni_http_inflight') === 1,
      'the upload',
    );
    expect(await s.drain({ timeoutMs: 50 })).toEqual({ clean: false, abandonedRequests: 1 });
    // Cut off unanswered; it never reached a worker.
    expect(await closed).toBe('');
    expect(g.entered()).toBe(0);
    expect(g.lr.report()).toMatchObject({ state: 'stopped', depth: 0 });
  });

  it('in the metrics, a request the drain cuts off is 444, apart from a client that left (499)', async () => {
    const { g, s } = await start();
    // A client whose call is running (held at the gate), and one stalled mid-upload.
    const left = request(`${s.address}/v1/linear`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
    });
    left.on('error', () => {}); // destroyed on purpose below
    left.end(Buffer.from(new Float32Array([1, 2, 3, 4]).buffer));
    await g.reach(ENTERED, 1);
    const stalled = connect({ host: '127.0.0.1', port: s.port });
    clients.push(stalled);
    stalled.on('error', () => {}); // the server cuts it off on purpose
    stalled.write(
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 64\r\n\r\n',
    );
    const inflight = async (n: number): Promise<boolean> =>
      sample((await s.metrics.scrape()).text, 'omni_http_inflight') === n;
    await until(() => inflight(2), 'both requests');
    const drained = s.drain({ timeoutMs: 600_000 });
    left.destroy(); // this client leaves during the drain
    await until(() => inflight(1), 'the client that left');
    s.expireDrain(); // the stalled one is cut off by the server
    expect(await drained).toEqual({ clean: false, abandonedRequests: 1 });
    const series = (status: number): string =>
      `omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="${status}"}`;
    // Both recorded by the time the drain resolved (serve-drain-accounting.test.ts).
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, series(499))).toBe(1);
    expect(sample(text, series(CUT_OFF_STATUS))).toBe(1);
    expect(CUT_OFF_STATUS).toBe(444);
  });
});
