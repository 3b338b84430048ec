/**
 * The request timeout (serve()'s requestTimeoutMs, `--request-timeout-ms`): a request must
 * arrive, headers and body, within it. fastify turned node:http's own (300 s) off, so a client
 * that stalled mid-upload or trickled its body held its connection, and the body read so far
 * (up to the body limit, 8 MiB by default), for good. Short timeouts here; the order of events
 * comes from the answers themselves, never from sleeps.
 */
import type { ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { getDefaultHighWaterMark } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServeHandle, ServeOptions } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { type Answer, postFloats, type RawAnswer, rawExchange } from './fixtures/serve-client.js';
import { ENTERED, HELD_INPUT } from './fixtures/serve-gate-layout.js';
import { clients, closeServed, type Gated, startServed } from './fixtures/serve-harness.js';

afterEach(closeServed);

async function start(options: ServeOptions, open = true): Promise<{ g: Gated; s: ServeHandle }> {
  return startServed(
    { inFeatures: 4, outFeatures: 2, threads: 1, open, admission: { requests: 2 } },
    options,
  );
}

const OCTET_HEAD =
  'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 16\r\n\r\n';
const TIMEOUTS = 'omni_http_client_errors_total{detail="ERR_HTTP_REQUEST_TIMEOUT"}';

function expectTimedOut(answer: RawAnswer): void {
  expect(answer.status).toBe(408);
  expect(answer.head).toMatch(/\r\nConnection: close/i);
  expect(JSON.parse(answer.body)).toMatchObject({ code: 'OMNI_ERR_REQUEST_TIMEOUT' });
}

describe('a request that does not arrive in time', () => {
  it('a body stalled mid-upload: 408 OMNI_ERR_REQUEST_TIMEOUT, closed, counted; no worker, no capacity', async () => {
    const { g, s } = await start({ requestTimeoutMs: 50 });
    // Half of one row's 16 bytes, then nothing: before, the connection stayed open for good.
    expectTimedOut(await rawExchange(s.port, [OCTET_HEAD, Buffer.alloc(8)]));
    expect(g.entered()).toBe(0);
    expect(g.lr.report().depth).toBe(0);
    expect(sample((await s.metrics.scrape()).text, TIMEOUTS)).toBe(1);
    expect(s.state).toBe('serving');
  });

  it('during a drain: answered 408 at its own timeout, and the drain, no longer held, is clean', async () => {
    const { g, s } = await start({ requestTimeoutMs: 50, drainTimeoutMs: 600_000 });
    // node's clock starts when the connection is accepted: a machine that froze this process
    // 50 ms before the headers were read timed the request out before it was ever in flight
    // (its 408 came, with no 'request' event to wait for). No drain can wait for that one: try
    // again, as the long-call test below does.
    let stalled: Promise<RawAnswer>;
    let tries = 0;
    for (;;) {
      tries++;
      let arrive!: () => void;
      const arrived = new Promise<void>((resolve) => {
        arrive = resolve;
        s.app.server.once('request', arrive);
      });
      stalled = rawExchange(s.port, [OCTET_HEAD, Buffer.alloc(8)]);
      const first = await Promise.race([arrived.then(() => 'arrived'), stalled.then(() => 'answered')]);
      if (first === 'arrived') break; // in flight: the drain waits for it
      s.app.server.removeListener('request', arrive);
      expectTimedOut(await stalled);
      expect(tries).toBeLessThan(5);
    }
    // Answered, not cut off: no 444, and nothing the drain abandoned (the CLI exits 0).
    expect(await s.drain()).toEqual({ clean: true, abandonedRequests: 0 });
    expectTimedOut(await stalled);
    expect(g.entered()).toBe(0);
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, TIMEOUTS)).toBe(tries);
    expect(text).not.toContain('status="444"');
  });

  it('a chunked body that stops between chunks: 408 too', async () => {
    const { g, s } = await start({ requestTimeoutMs: 50 });
    const head =
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
      'Transfer-Encoding: chunked\r\n\r\n8\r\n';
    expectTimedOut(await rawExchange(s.port, [head, Buffer.alloc(8), '\r\n']));
    expect(g.entered()).toBe(0);
    expect(g.lr.report().depth).toBe(0);
  });

  it('a body trickled without pause: cut off all the same (the timeout bounds the upload, not its gaps)', async () => {
    const { g, s } = await start({ requestTimeoutMs: 50 });
    const answer = await new Promise<RawAnswer>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port: s.port });
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', () => {});
      // One byte after another, each once the last was handed to the kernel: never idle, and a
      // body (1 MiB of JSON whitespace) far longer than this can send before the cut. The next
      // byte waits a turn of the loop: write callbacks chained directly starve the server,
      // which runs on this thread too.
      const trickle = (): void => {
        if (!socket.destroyed && socket.writable) socket.write(' ', () => setImmediate(trickle));
      };
      socket.on('connect', () => {
        socket.write(
          'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
            `Content-Length: ${2 ** 20}\r\n\r\n`,
          trickle,
        );
      });
      socket.on('close', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const split = text.indexOf('\r\n\r\n');
        resolve({
          status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]),
          head: text.slice(0, split),
          body: text.slice(split + 4),
        });
      });
    });
    expectTimedOut(answer);
    expect(g.entered()).toBe(0);
    expect(g.lr.report().depth).toBe(0);
  });

  it('headers that never end, and a connection that sends nothing: 408 within the request timeout', async () => {
    const { s } = await start({ requestTimeoutMs: 50 });
    const [partial, silent] = await Promise.all([
      rawExchange(s.port, ['GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: a']),
      rawExchange(s.port, []),
    ]);
    expectTimedOut(partial);
    expectTimedOut(silent);
  });

  it("by default a stalled upload is cut off too: 300 s, node:http's own default (fastify had it at 0: never)", async () => {
    const { s } = await start({});
    // Waiting out 300 s is no test; the server's own setting is what node enforces.
    expect(s.app.server.requestTimeout).toBe(300_000);
    expect(s.app.server.headersTimeout).toBe(60_000);
  });
});

describe('an Expect: 100-continue request waiting behind a call still running', () => {
  it('timed out meanwhile: after that answer, its 408 alone (no 100 Continue first), closed; nothing held', async () => {
    // 1 s, not 50 ms: node's clock for the held call's request starts when its connection is
    // accepted, and a machine that froze this process that long before reading it timed it out.
    const { g, s } = await start({ requestTimeoutMs: 1000 });
    const held = Buffer.from(new Float32Array([HELD_INPUT, 0, 0, 0]).buffer);
    const waiting =
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
      'Expect: 100-continue\r\nContent-Length: 16\r\n\r\n';
    // The waiting request's response, which closes with its connection, after the client's side.
    const waitingClosed = new Promise<void>((resolve) => {
      let heard = 0;
      s.app.server.on('request', (_req, res: ServerResponse) => {
        if (++heard === 2) res.once('close', () => resolve());
      });
    });
    // A freeze longer than the timeout (a stalled machine's is seconds) before the held call
    // was read timed that call out instead (its 408, no request): try again, as below.
    const entered = g.reach(ENTERED, 1);
    entered.catch(() => {}); // awaited below; a try that never enters fails on its own count
    let timedOut: Promise<unknown>;
    let heard: Promise<RawAnswer>;
    let tries = 0;
    for (;;) {
      tries++;
      let timeout!: (err: Error) => void;
      timedOut = new Promise((resolve) => {
        timeout = resolve;
        s.app.server.once('clientError', timeout);
      });
      heard = rawExchange(s.port, [OCTET_HEAD, held, waiting]);
      const first = await Promise.race([entered.then(() => 'entered'), heard.then(() => 'answered')]);
      if (first === 'entered') break;
      s.app.server.removeListener('clientError', timeout);
      expectTimedOut(await heard);
      expect(tries).toBeLessThan(5);
    }
    await timedOut;
    g.open();
    const answer = await heard;
    expect(answer.status).toBe(200);
    // What follows the held call's answer (8 bytes: one row of 2 floats).
    const rest = answer.body.slice(answer.body.indexOf('HTTP/1.1 '));
    // Before: 100 Continue, then the 408: the client was asked to upload a body already refused.
    expect(rest).not.toContain('100 Continue');
    expectTimedOut({ status: Number(rest.slice(9, 12)), ...splitAnswer(rest) });
    await waitingClosed;
    expect(g.lr.report().depth).toBe(0);
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, TIMEOUTS)).toBe(tries);
    expect(sample(text, 'omni_http_inflight')).toBe(0);
    const series = 'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="408"}';
    expect(sample(text, series)).toBe(1);
  });
});

function splitAnswer(text: string): { head: string; body: string } {
  const split = text.indexOf('\r\n\r\n');
  return { head: text.slice(0, split), body: text.slice(split + 4) };
}

describe('what the request timeout does not bound', () => {
  it('a call that runs longer than the timeout after its body arrived: answered 200, not cut off', async () => {
    const { g, s } = await start({ requestTimeoutMs: 50 }, false);
    // node's clock for a connection's first request starts when it is accepted: a machine that
    // froze this process for 50 ms before the body was read timed the call itself out (its 408
    // came, and it never entered). That is the timeout doing its job, not this case: try again.
    const entered = g.reach(ENTERED, 1);
    entered.catch(() => {}); // awaited below; a try that never enters fails on its own count
    let call: Promise<Answer>;
    for (let tries = 1; ; tries++) {
      call = postFloats(`http://127.0.0.1:${s.port}`, [1, 2, 3, 4]);
      const first = await Promise.race([entered.then(() => 'entered'), call.then(() => 'answered')]);
      if (first === 'entered') break;
      expect((await call).status).toBe(408);
      expect(tries).toBeLessThan(5);
    }
    // A request begun after the call's arrived, timed out: node's sweep has passed the call's
    // own timeout too (the same sweep checks every connection), with the call still parked.
    expectTimedOut(await rawExchange(s.port, [OCTET_HEAD, Buffer.alloc(8)]));
    g.open();
    expect((await call).status).toBe(200);
    expect(g.lr.report().depth).toBe(0);
  });

  // node keeps whole milliseconds, and 0 is none: rounded down, a timeout under 1 ms was none.
  it('a fraction of a millisecond is rounded up to 1 ms, never down to none', async () => {
    const { s } = await start({ requestTimeoutMs: 0.5 });
    expect([s.app.server.requestTimeout, s.app.server.headersTimeout]).toEqual([1, 1]);
  });

  // Only what node cannot hold (past 2^31 - 1 ms) is none: its own largest value is kept.
  it('2^31 - 1 ms, the most node holds, is kept; one more is none', async () => {
    const { s: most } = await start({ requestTimeoutMs: 2 ** 31 - 1 });
    const { s: past } = await start({ requestTimeoutMs: 2 ** 31 });
    expect([most.app.server.requestTimeout, past.app.server.requestTimeout]).toEqual([2 ** 31 - 1, 0]);
  });

  it("Infinity: no request timeout (none of node:http's request checks), the headers' still 60 s", async () => {
    const { s } = await start({ requestTimeoutMs: Number.POSITIVE_INFINITY });
    expect(s.app.server.requestTimeout).toBe(0);
    expect(s.app.server.headersTimeout).toBe(60_000);
  });
});

/** The status and head of each whole answer in `bytes`, in order (bodies skipped by length). */
function answersIn(bytes: Buffer): Array<{ status: number; head: string }> {
  const answers: Array<{ status: number; head: string }> = [];
  let rest = bytes;
  for (;;) {
    const split = rest.indexOf('\r\n\r\n');
    if (split < 0) return answers;
    const head = rest.subarray(0, split).toString('latin1');
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
    if (rest.length < split + 4 + length) return answers;
    answers.push({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), head });
    rest = rest.subarray(split + 4 + length);
  }
}

/**
 * One connection, three pipelined requests: a call held in its worker, then `second`, whose
 * answer waits behind it, then an upload whose headers are sent once that answer is written
 * and whose body is sent once the server has read them. After `meanwhile`, the held call is
 * let go; resolves once three answers are in (or the connection closed first), with `closed`
 * for the server's close of the connection, and `tries`: the connections it took (a freeze
 * past the request timeout before the held call was read timed that call out, 408, on its own
 * connection, and another was opened).
 */
async function behindQueuedAnswer(
  g: Gated,
  s: ServeHandle,
  second: string,
  meanwhile: () => Promise<void>,
): Promise<{ answers: Array<{ status: number; head: string }>; closed: Promise<void>; tries: number }> {
  const responses: ServerResponse[] = [];
  const waiting: Array<{ n: number; resolve: () => void }> = [];
  s.app.server.on('request', (_req, res: ServerResponse) => {
    responses.push(res);
    for (const w of waiting.filter((w) => w.n === responses.length)) w.resolve();
  });
  const nth = (n: number): Promise<void> =>
    new Promise((resolve) => {
      if (responses.length >= n) resolve();
      else waiting.push({ n, resolve });
    });
  const held = Buffer.from(new Float32Array([HELD_INPUT, 0, 0, 0]).buffer);
  const open = (): { socket: Socket; heard: () => Buffer; closed: Promise<void> } => {
    const socket = connect({ host: '127.0.0.1', port: s.port });
    clients.push(socket);
    socket.on('error', () => {});
    let heard = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      heard = Buffer.concat([heard, chunk]);
    });
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(Buffer.concat([Buffer.from(OCTET_HEAD), held, Buffer.from(second)]));
    return { socket, heard: () => heard, closed };
  };
  let tries = 1;
  let c = open();
  while ((await Promise.race([nth(1).then(() => 'read'), c.closed.then(() => 'closed')])) === 'closed') {
    expect(answersIn(c.heard()).map((a) => a.status)).toEqual([408]);
    expect(tries).toBeLessThan(5);
    tries++;
    c = open();
  }
  const { socket, heard, closed } = c;
  await nth(2);
  const queued = responses[1] as ServerResponse;
  // Its answer written, into node's buffer for it (a queued answer says no event for that):
  // its turn on the connection comes after the held call's.
  await until(() => queued.writableEnded, 'the second answer');
  expect(queued.socket).toBeNull();
  socket.write(OCTET_HEAD);
  await nth(3);
  socket.write(Buffer.alloc(16));
  await meanwhile();
  g.open();
  await until(() => answersIn(heard()).length === 3 || socket.destroyed, 'three answers');
  return { answers: answersIn(heard()), closed, tries };
}

describe('a pipelined upload behind answers that back up (node:http reads no more of it)', () => {
  const OUT = 8192;
  /**
   * Rows of 8,192 floats out (32 KiB each) to twice node's socket high-water mark, which node
   * 22 raised from 16 KiB to 64 KiB (nodejs/node#52037): one row is enough on node 20 only.
   */
  const rows = Math.ceil((2 * getDefaultHighWaterMark(false)) / (OUT * 4));
  const big = `${OCTET_HEAD.replace('/v1/linear', `/v1/linear?rows=${rows}`).replace(
    'Content-Length: 16',
    `Content-Length: ${16 * rows}`,
  )}${'\0'.repeat(16 * rows)}`;

  it('its clock runs from its first byte while its body waits unread: 408 after the answers before it', async () => {
    const { g, s } = await startServed(
      { inFeatures: 4, outFeatures: OUT, threads: 2, open: true, admission: { requests: 4 } },
      { requestTimeoutMs: 1000 },
    );
    const { answers, closed, tries } = await behindQueuedAnswer(g, s, big, async () => {
      // Listened for from here: a try that timed out its held call heard one of its own. Its
      // clock is 1 s; nothing between its head being read and here lets a timer run.
      await new Promise<void>((resolve) => s.app.server.once('clientError', () => resolve()));
      // Its whole body was sent, and none of it read: its call never ran.
      expect(g.entered()).toBe(2);
    });
    // The answers owed before it come first; then its 408, and the connection closes.
    expect(answers.map((a) => a.status)).toEqual([200, 200, 408]);
    await closed;
    expect(g.entered()).toBe(2);
    expect(sample((await s.metrics.scrape()).text, TIMEOUTS)).toBe(tries);
  });

  it('behind an answer that does not back up, the same upload is read at once and run', async () => {
    const { g, s } = await startServed(
      { inFeatures: 4, outFeatures: OUT, threads: 2, open: true, admission: { requests: 4 } },
      // The default timeout (300 s): nothing here waits for one, and 1 s timed this upload out
      // when a machine froze this process that long between reading its head and its body.
      {},
    );
    const health = 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n';
    const { answers } = await behindQueuedAnswer(g, s, health, async () => {
      // Read whole and run while the call ahead of it is still held.
      await g.reach(ENTERED, 2);
    });
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers.every((a) => !/\r\nconnection: close/i.test(a.head))).toBe(true);
  });
});
