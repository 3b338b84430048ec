/**
 * Pipelined requests whose client leaves: a response still queued behind an earlier one is
 * never attached to the connection, so node:http never closes it. The server must still end
 * it: its work is aborted, it leaves the in-flight count (a drain stays clean) and it is a 499.
 */
import { createServer, type ServerResponse } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type ServeHandle, serve } from '../src/serve/index.js';
import { closeWithConnection } from '../src/serve/pipelined-close.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { pipelinedExchange } from './fixtures/serve-client.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import { closeServed, type Gated, gatedForTest } from './fixtures/serve-harness.js';

afterEach(closeServed);

async function connected(port: number): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port });
  socket.on('error', () => {}); // it is cut off on purpose
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return socket;
}

/**
 * Resolves when a connection's parser fails (after the server's own 'clientError' handler, which
 * was registered first, has run): the error is counted only once answered, so the count is no
 * sign of it.
 */
function parseFailure(s: ServeHandle): Promise<string | undefined> {
  return new Promise((resolve) => {
    s.app.server.once('clientError', (err: Error & { code?: string }) => resolve(err.code));
  });
}

/** A server on one worker thread (gated), and a whole call for it to hold while more arrive. */
async function servedWithOneThread(requests = 4): Promise<{
  g: Gated;
  s: ServeHandle;
  first: Buffer;
}> {
  const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, admission: { requests } });
  const s = await serve(g.lr, { port: 0 });
  const body = Buffer.from(new Float32Array([1, 2, 3, 4]).buffer);
  const head =
    'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
    `Content-Length: ${body.length}\r\n\r\n`;
  return { g, s, first: Buffer.concat([Buffer.from(head), body]) };
}

describe('pipelined requests', () => {
  it('both calls of a connection that leaves are aborted, none stays in flight, both are 499', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 2, admission: { requests: 4 } });
    const s = await serve(g.lr, { port: 0 });
    const socket = await connected(s.port);
    const body = Buffer.from(new Float32Array([1, 2, 3, 4]).buffer);
    const head = Buffer.from(
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
        `Content-Length: ${body.length}\r\n\r\n`,
    );
    socket.write(Buffer.concat([head, body, head, body]));
    await g.reach(ENTERED, 2); // both are held in a worker; the second answer is queued
    socket.destroy();
    await until(() => g.lr.report().aborted === 2, 'both calls to hear the client leave');
    g.open();
    await until(() => g.lr.report().depth === 0, 'the work to end');
    expect(g.lr.report()).toMatchObject({ aborted: 2, completed: 0 });
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, 'omni_http_inflight')).toBe(0);
    expect(
      sample(text, 'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="499"}'),
    ).toBe(2);
    expect(await s.drain({ timeoutMs: 600_000 })).toEqual({ clean: true, abandonedRequests: 0 });
  });

  // Mutant: closeWithConnection without its detach (src/serve/pipelined-close.ts): each queued
  // response would leave a 'close' listener on its connection for as long as the connection
  // lives, and a kept-alive client would grow the list with every batch it pipelines.
  it('a kept-alive connection keeps no listener per request it pipelined', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, open: true });
    const s = await serve(g.lr, { port: 0 });
    const accepted = new Promise<Socket>((resolve) => s.app.server.once('connection', resolve));
    const socket = await connected(s.port);
    const connection = await accepted;
    let answers = 0;
    let heard = '';
    const waiters: Array<() => void> = [];
    socket.on('data', (chunk: Buffer) => {
      heard += chunk.toString('latin1');
      answers = heard.split('HTTP/1.1 ').length - 1;
      for (const wake of waiters.splice(0)) wake();
    });
    const inflight = async (): Promise<number | undefined> =>
      sample((await s.metrics.scrape()).text, 'omni_http_inflight');
    // The client may read an answer before the server has closed its response: once none is in
    // flight, every response of the batch has closed, and let go of what it registered.
    const answered = async (n: number): Promise<void> => {
      while (answers < n) await new Promise<void>((resolve) => waiters.push(resolve));
      await until(async () => (await inflight()) === 0, 'the answered responses to close');
    };
    const post = (body: string): string =>
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const ok = post('{"rows":[[1,2,3,4]]}');
    // A call, a row the route refuses, an unknown route and a call, back to back.
    const batch = [ok, post('{"rows":[[1,2,3]]}'), 'GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n', ok].join('');
    const listeners = (): Record<string, number> =>
      Object.fromEntries(connection.eventNames().map((e) => [String(e), connection.listenerCount(e)]));
    socket.write(batch);
    await answered(4);
    const after1 = listeners();
    for (let i = 2; i <= 25; i++) {
      socket.write(batch);
      await answered(4 * i);
    }
    expect(listeners()).toEqual(after1);
    socket.destroy();
    expect(await s.drain({ timeoutMs: 600_000 })).toEqual({ clean: true, abandonedRequests: 0 });
  });

  // Before: each queued response added a 'close' listener of its own to the connection, so a
  // client pipelining more than ten requests behind a held call made node warn
  // (MaxListenersExceededWarning) and each response's detach scanned the whole list.
  it('many requests pipelined behind a held call: one close listener, and every call hears the client leave', async () => {
    const { g, s, first } = await servedWithOneThread(64);
    const accepted = new Promise<Socket>((resolve) => s.app.server.once('connection', resolve));
    const socket = await connected(s.port);
    const connection = await accepted;
    socket.write(Buffer.concat([first, first]));
    await g.reach(ENTERED, 1); // the first call is held in the worker
    await until(() => g.lr.report().depth === 2, 'the second call queued behind it');
    const withOneQueued = connection.listenerCount('close');
    socket.write(Buffer.concat(Array.from({ length: 38 }, () => first)));
    await until(() => g.lr.report().depth === 40, 'every call queued behind it');
    expect(connection.listenerCount('close')).toBe(withOneQueued);
    socket.destroy();
    await until(() => g.lr.report().aborted === 40, 'every call to hear the client leave');
    g.open();
    await until(() => g.lr.report().depth === 0, 'the work to end');
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, 'omni_http_inflight')).toBe(0);
    expect(
      sample(text, 'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="499"}'),
    ).toBe(40);
    expect(await s.drain({ timeoutMs: 600_000 })).toEqual({ clean: true, abandonedRequests: 0 });
  });

  it('an answer queued behind a held call, its head written, is a 499 when the client leaves', async () => {
    const { g, s, first } = await servedWithOneThread();
    const responses: ServerResponse[] = [];
    s.app.server.on('request', (_req, res: ServerResponse) => responses.push(res));
    const socket = await connected(s.port);
    socket.write(Buffer.concat([first, Buffer.from('GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n')]));
    await g.reach(ENTERED, 1); // the first call is held in the worker
    // The 404 is answered at once, into node's buffer: its turn on the connection never comes.
    await until(() => responses[1]?.headersSent === true, 'the 404 to be written behind the call');
    socket.destroy();
    await until(() => g.lr.report().aborted === 1, 'the call to hear the client leave');
    g.open();
    await until(
      async () => sample((await s.metrics.scrape()).text, 'omni_http_inflight') === 0,
      'both to close',
    );
    const text = (await s.metrics.scrape()).text;
    // None of the 404 left the server: recorded as 404, the status its head said, it read as sent.
    const series = (code: number): string =>
      `omni_http_request_duration_seconds_count{route="unmatched",method="GET",status="${code}"}`;
    expect(sample(text, series(499))).toBe(1);
    expect(sample(text, series(404))).toBeUndefined();
  });

  it.each([
    [
      'headers too large',
      `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      false,
    ],
    ['a method node does not know', 'FOO /health HTTP/1.1\r\nHost: x\r\n\r\n', 400, false],
    // Routed (its answer queued behind the first) before its body fails.
    [
      'a chunk size that is not hex',
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
        'Transfer-Encoding: chunked\r\n\r\nzz\r\n',
      400,
      true,
    ],
  ])(
    'a request node cannot parse (%s) behind one still running: that one is answered first, then the error',
    async (_name, broken, status, routed) => {
      const { g, s, first } = await servedWithOneThread();
      const failed = parseFailure(s);
      const heard = pipelinedExchange(s.port, Buffer.concat([first, Buffer.from(broken)]), 2);
      await g.reach(ENTERED, 1); // the first call is held in the worker
      // The parser has failed on the second request while the first is still unanswered.
      const detail = await failed;
      g.open();
      // Before: the error answer took the first request's place ([status], its work aborted).
      expect(await heard).toEqual({ statuses: [200, status], closed: false });
      await until(() => g.lr.report().depth === 0, 'the work to end');
      expect(g.lr.report()).toMatchObject({ completed: 1, aborted: 0 });
      // The broken request is recorded as answered (a chunked body's: routed, its 400), not as
      // a client that left: its answer was written once its response reached the connection.
      // It is recorded as its connection closes, which lingers (linger.ts) until this client's
      // close reaches the server.
      const series = (code: number): string =>
        `omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="${code}"}`;
      if (routed) {
        await until(
          async () => sample((await s.metrics.scrape()).text, series(400)) !== undefined,
          'the broken request to be recorded',
        );
      }
      const text = (await s.metrics.scrape()).text;
      expect(sample(text, series(499))).toBeUndefined();
      expect(sample(text, series(200))).toBe(1);
      expect(sample(text, series(400))).toBe(routed ? 1 : undefined);
      // Answered, so counted.
      expect(sample(text, `omni_http_client_errors_total{detail="${detail}"}`)).toBe(1);
      expect(await s.drain({ timeoutMs: 600_000 })).toEqual({ clean: true, abandonedRequests: 0 });
    },
  );

  // A 405 is decided from the headers, before the body it refuses is read, and written (queued
  // behind the first answer) when node's parser fails on that body. The 405, which says
  // Connection: close, is that request's answer: the error must not take its place when its
  // turn comes (the error handler, finding a head already written, would destroy the connection
  // before the 405 left).
  it('a refused request whose unread body node cannot parse, behind one still running: its own answer, no error after it', async () => {
    const { g, s, first } = await servedWithOneThread();
    const failed = parseFailure(s);
    const refused = Buffer.from(
      'PUT /v1/linear HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    );
    const heard = pipelinedExchange(s.port, Buffer.concat([first, refused]), 2);
    await g.reach(ENTERED, 1); // the first call is held in the worker
    expect(await failed).toBe('HPE_INVALID_CHUNK_SIZE');
    await until(
      async () => sample((await s.metrics.scrape()).text, 'omni_http_inflight') === 2,
      'the 405 routed',
    );
    g.open();
    expect((await heard).statuses).toEqual([200, 405]);
    await until(
      async () => sample((await s.metrics.scrape()).text, 'omni_http_inflight') === 0,
      'both closed',
    );
    const text = (await s.metrics.scrape()).text;
    expect(
      sample(text, 'omni_http_request_duration_seconds_count{route="/v1/linear",method="PUT",status="405"}'),
    ).toBe(1);
    expect(sample(text, 'omni_http_client_errors_total{detail="HPE_INVALID_CHUNK_SIZE"}')).toBeUndefined();
    expect(await s.drain({ timeoutMs: 600_000 })).toEqual({ clean: true, abandonedRequests: 0 });
  });

  // The 417 of an unsupported Expect is written by the server's 'checkExpectation' listener,
  // which node calls instead of 'request': the error handler took the request before it as the
  // latest, and wrote its 400 once that one's answer ended, after the 417 that closes.
  it('a request node cannot parse behind an answered Expect it does not support: the 417 closes, nothing after it', async () => {
    const { g, s, first } = await servedWithOneThread();
    const unsupported = Buffer.from('GET /health HTTP/1.1\r\nHost: x\r\nExpect: x-unsupported\r\n\r\n');
    const broken = Buffer.from('FOO /health HTTP/1.1\r\nHost: x\r\n\r\n');
    const failed = parseFailure(s);
    const heard = pipelinedExchange(s.port, Buffer.concat([first, unsupported, broken]), 3);
    await g.reach(ENTERED, 1); // the first call is held in the worker
    expect(await failed).toBe('HPE_INVALID_METHOD');
    g.open();
    // Before: [200, 417, 400], the 400 after an answer that said Connection: close.
    expect(await heard).toEqual({ statuses: [200, 417], closed: true });
    await until(() => g.lr.report().depth === 0, 'the work to end');
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, 'omni_http_client_errors_total{detail="EXPECTATION_FAILED"}')).toBe(1);
    expect(sample(text, 'omni_http_client_errors_total{detail="HPE_INVALID_METHOD"}')).toBeUndefined();
    expect(await s.drain({ timeoutMs: 600_000 })).toEqual({ clean: true, abandonedRequests: 0 });
  });

  // While the server drains a connection's last answer closes it, that of a call before a
  // request node cannot parse too (the request is never routed): the error was counted when the
  // parser failed, though never answered (a CONNECT in that place was neither).
  it('a request node cannot parse behind a call whose answer closes the connection (a drain): not answered, not counted', async () => {
    const { g, s, first } = await servedWithOneThread();
    const failed = parseFailure(s);
    const heard = pipelinedExchange(
      s.port,
      Buffer.concat([first, Buffer.from('FOO /health HTTP/1.1\r\nHost: x\r\n\r\n')]),
      2,
    );
    await g.reach(ENTERED, 1); // the first call is held in the worker
    expect(await failed).toBe('HPE_INVALID_METHOD');
    const drained = s.drain({ timeoutMs: 60_000 });
    g.open();
    expect(await heard).toEqual({ statuses: [200], closed: true });
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, 'omni_http_client_errors_total{detail="HPE_INVALID_METHOD"}')).toBeUndefined();
  });

  // While draining, every answer closed its connection: the first of two pipelined calls,
  // both admitted before the drain, closed it under the second, whose work was then aborted
  // (499) although it was accepted and about to be answered.
  it('two pipelined calls in flight when the drain starts: both answered, the last one closes', async () => {
    const { g, s, first } = await servedWithOneThread();
    const socket = await connected(s.port);
    let heard = '';
    socket.on('data', (chunk: Buffer) => {
      heard += chunk.toString('latin1');
    });
    // The server's half of the close, after its last answer.
    const ended = new Promise<void>((resolve) => socket.once('end', () => resolve()));
    socket.write(Buffer.concat([first, first]));
    await g.reach(ENTERED, 1); // the first call is held in the worker
    await until(() => g.lr.report().queued === 1, 'the second call queued behind it');
    const drained = s.drain({ timeoutMs: 60_000 });
    g.open();
    await ended;
    const heads = heard.split('HTTP/1.1 ').slice(1);
    expect(heads.map((h) => h.slice(0, 3))).toEqual(['200', '200']);
    expect(heads.map((h) => /\r\nconnection: close\r\n/i.test(h))).toEqual([false, true]);
    socket.destroy();
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
    expect(g.lr.report()).toMatchObject({ completed: 2, aborted: 0 });
  });

  // Before: counted when it came, though its 417 was never written.
  it('an unsupported Expect behind a call still running, whose client then leaves: not answered, not counted', async () => {
    const { g, s, first } = await servedWithOneThread();
    const expectation = new Promise<void>((resolve) =>
      s.app.server.once('checkExpectation', () => resolve()),
    );
    const socket = await connected(s.port);
    socket.write(
      Buffer.concat([first, Buffer.from('GET /health HTTP/1.1\r\nHost: x\r\nExpect: x-unsupported\r\n\r\n')]),
    );
    await g.reach(ENTERED, 1); // the first call is held in the worker
    await expectation; // its 417 is queued behind the first answer
    socket.destroy();
    await until(() => g.lr.report().aborted === 1, 'the call to hear the client leave');
    g.open();
    await until(() => g.lr.report().depth === 0, 'the work to end');
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, 'omni_http_client_errors_total{detail="EXPECTATION_FAILED"}')).toBeUndefined();
    expect(await s.drain({ timeoutMs: 600_000 })).toEqual({ clean: true, abandonedRequests: 0 });
  });

  it('closeWithConnection ends a queued response at once when its connection is already gone', async () => {
    const server = createServer();
    const queued = new Promise<{ res: ServerResponse; connection: Socket }>((resolve) => {
      let first: ServerResponse | undefined;
      server.on('request', (req, res) => {
        if (first === undefined) first = res;
        else resolve({ res, connection: req.socket });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const socket = await connected((server.address() as AddressInfo).port);
    socket.write('GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n');
    const { res, connection } = await queued;
    expect(res.socket).toBeNull();
    connection.destroy();
    await new Promise<void>((resolve) => connection.once('close', () => resolve()));
    let closes = 0;
    res.on('close', () => closes++);
    closeWithConnection(res, connection);
    expect({ closes, destroyed: res.destroyed }).toEqual({ closes: 1, destroyed: true });
    server.close();
  });

  // Once its turn came, node closes it with its connection: ended a second time from the queue,
  // it said 'close' twice.
  it('closeWithConnection leaves a response to node once it is attached: one close with its connection', async () => {
    const server = createServer();
    const both = new Promise<[ServerResponse, { res: ServerResponse; connection: Socket }]>((resolve) => {
      let first: ServerResponse | undefined;
      server.on('request', (req, res) => {
        if (first === undefined) first = res;
        else resolve([first, { res, connection: req.socket }]);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const socket = await connected((server.address() as AddressInfo).port);
    socket.write('GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n');
    const [first, { res, connection }] = await both;
    let closes = 0;
    res.on('close', () => closes++);
    closeWithConnection(res, connection);
    const attached = new Promise<void>((resolve) => res.once('socket', () => resolve()));
    first.end('a');
    await attached;
    const gone = new Promise<void>((resolve) => connection.once('close', () => resolve()));
    socket.destroy();
    await gone;
    expect({ closes, destroyed: res.destroyed }).toEqual({ closes: 1, destroyed: true });
    server.close();
  });
});
