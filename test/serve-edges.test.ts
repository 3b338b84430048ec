/**
 * Edges of the HTTP front the other serve tests left unguarded (found by changing the code on
 * purpose and seeing which changes no test noticed): inclusive bounds, report fields copied
 * into /health and /metrics, 100-continue at the body limit and on other methods, a runtime
 * whose close resolves nothing. The gated fixture worker holds calls; ordering is by its
 * control words, the runtime's report and the bytes heard on the wire, never by sleeps.
 */
import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type Served, type ServeHandle, serve } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { get, postFloats, postJson, rawExchange } from './fixtures/serve-client.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import {
  closeServed,
  type Gated,
  type GatedOptions,
  gatedForTest,
  serveForTest,
  sharedServed,
  widthReadTwice,
} from './fixtures/serve-harness.js';

const IN = 4;

afterEach(closeServed);

function gated(options: GatedOptions = {}): Promise<Gated> {
  return gatedForTest({ inFeatures: IN, outFeatures: 2, threads: 1, ...options });
}

describe('options', () => {
  // Kills: retryAfterSeconds' inclusive minimum 0 turned into 1 (0 refused as an invalid option).
  it('retryAfterSeconds: 0 is accepted and is the Retry-After of a capacity 503', async () => {
    const g = await gated({ admission: { requests: 1 } });
    const s = await serveForTest(g.lr, { retryAfterSeconds: 0 });
    const held = postFloats(s.address, [1, 2, 3, 4]);
    await g.reach(ENTERED, 1);
    const refused = await postFloats(s.address, [1, 2, 3, 4]);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('0');
    g.open();
    expect((await held).status).toBe(200);
  });
});

describe('drain', () => {
  // Kills: `closed?.clean === true` turned into `closed?.clean !== false` (a runtime whose
  // close resolves nothing, e.g. hand-written JavaScript, would make the drain look clean).
  it('a runtime whose close() resolves nothing: the drain is not clean', async () => {
    const g = await gated({ open: true, admission: { requests: 2 } });
    const lr = g.lr;
    const runtime: Served = {
      run: lr.run.bind(lr),
      report: lr.report.bind(lr),
      close: (async (options?: { timeoutMs?: number }) => {
        await lr.close(options);
        return undefined;
      }) as unknown as Served['close'],
      inFeatures: lr.inFeatures,
      outFeatures: lr.outFeatures,
    };
    const s = await serve(runtime, { port: 0 });
    expect((await postFloats(s.address, [1, 2, 3, 4])).status).toBe(200);
    expect(await s.close()).toEqual({ clean: false, abandonedRequests: 0 });
    expect(lr.report().state).toBe('stopped');
  });
});

describe('the runtime serve() checked', () => {
  it('a width that reads otherwise after serve() checked it: the checked one is served', async () => {
    // Read again per request, the width below was 8 there: every 4-float row was a 400.
    const g = await gated({ open: true, admission: { requests: 2 } });
    const lr = g.lr;
    const runtime = widthReadTwice(lr, 'inFeatures');
    const s = await serve(runtime, { port: 0 });
    const answer = await postFloats(s.address, [1, 2, 3, 4]);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-omni-rows')).toBe('1');
    expect(await s.close()).toEqual({ clean: true, abandonedRequests: 0 });
  });

  it('an output width that reads otherwise after serve() checked it: the checked one is served', async () => {
    // Read again per request, the width below was twice the runtime's there: each answer of
    // the right length was refused as the worker's fault (500), or cut into rows it did not have.
    const g = await gated({ open: true, admission: { requests: 2 } });
    const lr = g.lr;
    const runtime = widthReadTwice(lr, 'outFeatures');
    const s = await serve(runtime, { port: 0 });
    const octets = await postFloats(s.address, [1, 2, 3, 4]);
    expect([octets.status, octets.headers.get('x-omni-rows')]).toEqual([200, '1']);
    const json = await postJson(s.address, {
      rows: [
        [1, 2, 3, 4],
        [5, 6, 7, 8],
      ],
    });
    expect(json.status).toBe(200);
    expect((json.json as { rows: number[][] }).rows.map((row) => row.length)).toEqual([
      lr.outFeatures,
      lr.outFeatures,
    ]);
    expect(await s.close()).toEqual({ clean: true, abandonedRequests: 0 });
  });
});

describe('GET /health and /metrics', () => {
  // Kills: /health's `waiting` not taken from the report (always 0).
  it('/health counts a caller waiting for admission (bounded wait mode)', async () => {
    const g = await gated({ admission: { requests: 1, wait: true } });
    const s = await serveForTest(g.lr);
    const first = postFloats(s.address, [1, 2, 3, 4]);
    await g.reach(ENTERED, 1);
    const second = postFloats(s.address, [1, 2, 3, 4]);
    await until(() => g.lr.report().waiting === 1, 'the second call to wait for admission');
    const health = await get(s.address, '/health');
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ depth: 1, capacity: 1, waiting: 1 });
    g.open();
    expect([(await first).status, (await second).status]).toEqual([200, 200]);
  });

  // Kills: 'unavailable' missing from the outcomes calls_total exports.
  it('calls_total counts the calls a stopped runtime refused as unavailable', async () => {
    const g = await gated({ open: true, admission: { requests: 2 } });
    const s = await serveForTest(g.lr, { closeRuntime: false });
    await g.lr.close();
    const refused = await postFloats(s.address, [1, 2, 3, 4]);
    expect(refused.status).toBe(503);
    expect(refused.json?.code).toBe('OMNI_ERR_UNAVAILABLE');
    expect(g.lr.report().unavailable).toBe(1);
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, 'omni_runtime_calls_total{outcome="unavailable"}')).toBe(1);
  });
});

describe('Expect: 100-continue', () => {
  const BODY_LIMIT = 64;
  const shared = sharedServed(
    { inFeatures: IN, outFeatures: 3, open: true, admission: { requests: 4 } },
    { bodyLimit: BODY_LIMIT },
  );
  const server = async (): Promise<ServeHandle> => (await shared()).s;
  // The drain closes the runtime too (the server owns it).
  afterAll(shared.close);

  // Kills: BODY_METHODS cut to POST only (fastify reads the JSON body of these methods too, on
  // a 404 as on a route; without the 100 the client would wait for it while the server waits
  // for the body).
  it.each(['PUT', 'PATCH', 'DELETE'])(
    'a %s with a JSON body to an unknown route hears 100 Continue, then 404',
    async (method) => {
      const s = await server();
      const answer = await rawExchange(s.port, [
        `${method} /nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
          'Content-Length: 2\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n',
        '{}',
      ]);
      expect(answer.status).toBe(100);
      expect(answer.body).toMatch(/^HTTP\/1\.1 404 /);
    },
  );
});

/** A call the gate holds, then a CONNECT on its connection; resolves once node handed it over. */
async function callThenConnect(g: Gated, s: ServeHandle): Promise<Socket> {
  const handedOver = new Promise<void>((resolve) => {
    s.app.server.once('connect', () => resolve());
  });
  const client = connect(s.port, '127.0.0.1');
  client.on('error', () => {});
  const body = Buffer.from(new Float32Array([1, 2, 3, 4]).buffer);
  client.write(
    Buffer.concat([
      Buffer.from(
        'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
          `Content-Length: ${body.length}\r\n\r\n`,
      ),
      body,
      Buffer.from('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'),
    ]),
  );
  await g.reach(ENTERED, 1);
  await handedOver;
  return client;
}

describe('CONNECT (this server is no proxy)', () => {
  // Before: node:http, with no 'connect' listener, destroyed the socket: the client heard
  // nothing at all (not even the answers owed before it), and nothing was counted.
  it.each([
    ['alone', ''],
    // node hands over the connection on the CONNECT while the GET's answer is still to come.
    ['behind a request not answered yet', 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n'],
  ])(
    '%s: answered 501 OMNI_ERR_NOT_IMPLEMENTED in JSON, in order, counted, then closed',
    async (_name, before) => {
      const g = await gated({ open: true });
      const s = await serveForTest(g.lr);
      const answer = await rawExchange(s.port, [
        `${before}CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`,
      ]);
      const text = answer.body === '' ? answer.head : `${answer.head}\r\n\r\n${answer.body}`;
      expect(text.match(/HTTP\/1\.1 \d{3} /g)).toEqual([
        ...(before === '' ? [] : ['HTTP/1.1 200 ']),
        'HTTP/1.1 501 ',
      ]);
      const last = text.slice(text.lastIndexOf('HTTP/1.1 '));
      expect(last).toMatch(/\r\nConnection: close\r\n/i);
      expect(JSON.parse(last.slice(last.indexOf('\r\n\r\n') + 4))).toMatchObject({
        code: 'OMNI_ERR_NOT_IMPLEMENTED',
      });
      const metrics = (await s.metrics.scrape()).text;
      expect(sample(metrics, 'omni_http_client_errors_total{detail="CONNECT"}')).toBe(1);
    },
  );

  // node takes its own 'error' listener off a connection it hands to 'connect' listeners: an
  // error on it then (the client resetting it while an answer before the CONNECT is written, or
  // while the close lingers) was an uncaught exception that ended the server's process.
  it('the connection handed over keeps an error listener: an error on it closes it, never throws', async () => {
    const g = await gated({ open: true });
    const s = await serveForTest(g.lr);
    const handedOver = new Promise<Socket>((resolve) => {
      s.app.server.once('connect', (_req: IncomingMessage, socket: Socket) => resolve(socket));
    });
    const client = connect(s.port, '127.0.0.1');
    client.on('error', () => {});
    client.write('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    const socket = await handedOver;
    try {
      const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
      expect(() => socket.emit('error', reset)).not.toThrow();
      expect(socket.destroyed).toBe(true);
    } finally {
      client.destroy();
    }
  });

  // node stops reading a connection it hands to 'connect' listeners: a client that left while
  // a call before its CONNECT still ran was never heard, and the call ran on for nobody (a
  // connection without a CONNECT aborts it: serve-pipelined).
  it.each([
    ['closes its side', (c: Socket) => c.end()],
    ['destroys the connection', (c: Socket) => c.destroy()],
  ])('behind a call still running, a client that %s aborts the call (499)', async (_name, leave) => {
    const g = await gated();
    const s = await serveForTest(g.lr);
    const client = await callThenConnect(g, s);
    leave(client);
    await until(() => g.lr.report().aborted === 1, 'the call to hear the client leave');
    g.open();
    await until(() => g.lr.report().depth === 0, 'the work to end');
    expect(g.lr.report()).toMatchObject({ aborted: 1, completed: 0 });
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, 'omni_http_inflight')).toBe(0);
    expect(
      sample(text, 'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="499"}'),
    ).toBe(1);
  });

  // node stops tracking a connection it hands over: the drain's closeAllConnections missed it,
  // and the HTTP server's close then waited for it as long as the call before the CONNECT ran
  // (forever, for a runtime the drain does not close) or its close lingered.
  it('the drain closes a connection handed over, as it closes the others', async () => {
    const g = await gated();
    const s = await serveForTest(g.lr, { closeRuntime: false });
    const client = await callThenConnect(g, s);
    try {
      // The gate stays shut until the drain is over: only the drain can close the connection.
      // Abandoned: the call, and the CONNECT whose 501 was owed behind it.
      expect(await s.drain({ timeoutMs: 1 })).toEqual({ clean: false, abandonedRequests: 2 });
    } finally {
      client.destroy();
    }
    // The connection's 'close' may trail the server's: the call hears it, and is aborted.
    await until(() => g.lr.report().aborted === 1, 'the call to hear its connection close');
    g.open();
    await until(() => g.lr.report().depth === 0, 'the work to end');
    expect(g.lr.report()).toMatchObject({ aborted: 1, completed: 0 });
    await g.lr.close();
  });

  // While the server drains a connection's last answer closes it, the answer of a call before a
  // CONNECT too: the CONNECT was counted when it came, though never answered.
  it('behind a call whose answer closes the connection (a drain): not answered, not counted', async () => {
    const g = await gated();
    const s = await serveForTest(g.lr);
    const client = await callThenConnect(g, s);
    let heard = '';
    client.on('data', (chunk: Buffer) => {
      heard += chunk.toString('latin1');
    });
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    const drained = s.drain({ timeoutMs: 60_000 });
    g.open();
    await closed;
    expect(heard.match(/HTTP\/1\.1 \d{3} /g)).toEqual(['HTTP/1.1 200 ']);
    expect(heard).toMatch(/\r\nconnection: close\r\n/i);
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
    const metrics = (await s.metrics.scrape()).text;
    expect(sample(metrics, 'omni_http_client_errors_total{detail="CONNECT"}')).toBeUndefined();
  });

  it('behind an answer that closes the connection: not answered, not counted (RFC 9112 9.6)', async () => {
    const g = await gated({ open: true });
    const s = await serveForTest(g.lr);
    // A malformed URL is answered before its (empty) body is read: with Connection: close.
    const answer = await rawExchange(s.port, [
      'GET /% HTTP/1.1\r\nHost: x\r\n\r\nCONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
    ]);
    expect(answer.head).toMatch(/^HTTP\/1\.1 400 [\s\S]*\r\nconnection: close(\r\n|$)/i);
    expect(answer.body).not.toContain('HTTP/1.1');
    const metrics = (await s.metrics.scrape()).text;
    expect(sample(metrics, 'omni_http_client_errors_total{detail="CONNECT"}')).toBeUndefined();
  });
});
