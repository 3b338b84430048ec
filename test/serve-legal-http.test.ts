/**
 * Odd but legal HTTP on the linear route: pipelining behind a body that fails to parse, a
 * transfer coding other than chunked, Expect: 100-continue on methods whose body is never read,
 * and a deadline header too long for a double. Real sockets on 127.0.0.1, port 0, the gated
 * fixture worker with its gate open (no test here holds capacity). No sleeps: every exchange
 * ends when its answers are complete or the server closes the connection.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import type { ServeHandle } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { pipelinedExchange } from './fixtures/serve-client.js';
import { sharedServed } from './fixtures/serve-harness.js';

const IN = 4;
const shared = sharedServed(
  { inFeatures: IN, outFeatures: 3, open: true, admission: { requests: 4 } },
  { deadlineMs: 60_000 },
);
afterAll(shared.close);

const floats = (values: number[]): Buffer => Buffer.from(new Float32Array(values).buffer);
function octetRequest(body: Buffer, extraHeaders = ''): Buffer {
  return Buffer.concat([
    Buffer.from(
      `POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n${extraHeaders}` +
        `Content-Length: ${body.length}\r\n\r\n`,
    ),
    body,
  ]);
}

async function scrape(s: ServeHandle): Promise<string> {
  return (await fetch(`${s.address}/metrics`)).text();
}

describe('pipelining after a body parse error (fastify answers it with Connection: close)', () => {
  it('a request pipelined behind a malformed JSON body is answered, not run and then dropped as a 499', async () => {
    const { g, s } = await shared();
    const bad = '{"rows": [[1,'; // complete per its Content-Length, just not JSON
    const first = Buffer.from(
      `POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${bad.length}\r\n\r\n${bad}`,
    );
    const second = octetRequest(floats([1, 2, 3, 4]));
    const before = g.entered();
    const series499 =
      'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="499"}';
    const aborted0 = g.lr.report().aborted;
    const heard = await pipelinedExchange(s.port, Buffer.concat([first, second]), 2);
    // Whatever the server did with the second request has ended once depth is back to 0.
    await until(() => g.lr.report().depth === 0, 'the runtime to be idle');
    const ran = g.entered() - before;
    const text = await scrape(s);
    // The whole malformed body was read: the connection stays in step and the second request is
    // answered. Closing after the 400 dropped its answer after it had run on a worker, recorded
    // as a client that left (499); RFC 9112 9.6 says a server that closes must not run it.
    expect(heard).toEqual({ statuses: [400, 200], closed: false });
    expect(ran).toBe(1);
    expect(sample(text, series499) ?? 0).toBe(0);
    expect(g.lr.report().aborted).toBe(aborted0);
  });
});

describe('a compressed body', () => {
  it('Transfer-Encoding: gzip, chunked is refused 415, never computed on the compressed bytes', async () => {
    const { g, s } = await shared();
    // A gzip stream whose length happens to be whole rows of floats (k found by search).
    let z = Buffer.alloc(0);
    for (let k = 0; ; k++) {
      z = gzipSync(floats([1, 2, 3, k]));
      if (z.length % (4 * IN) === 0) break;
    }
    const request = Buffer.concat([
      Buffer.from(
        'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
          `Transfer-Encoding: gzip, chunked\r\n\r\n${z.length.toString(16)}\r\n`,
      ),
      z,
      Buffer.from('\r\n0\r\n\r\n'),
    ]);
    const before = g.entered();
    const heard = await pipelinedExchange(s.port, request, 1);
    expect(heard.statuses).toEqual([415]);
    expect(g.entered() - before).toBe(0);
  });
});

describe('Expect: 100-continue on a method whose body fastify never reads', () => {
  it.each(['PURGE', 'COPY', 'PROPFIND'])(
    '%s /v1/linear: a 404 with no 100 Continue before it',
    async (method) => {
      const { s } = await shared();
      const heard = await pipelinedExchange(
        s.port,
        Buffer.from(
          `${method} /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n` +
            'Content-Length: 16\r\nExpect: 100-continue\r\n\r\n',
        ),
        1,
      );
      // The body is never sent: a 100 here asks the client to upload a body nobody reads.
      expect(heard.statuses).toEqual([404]);
    },
  );
});

describe('x-omni-deadline-ms of any length', () => {
  it.each([
    ['1e400', '1e400'],
    ['400 digits', '9'.repeat(400)],
  ])('%s: the server deadline applies (200), not a 400', async (_name, value) => {
    const { s } = await shared();
    const heard = await pipelinedExchange(
      s.port,
      octetRequest(floats([1, 2, 3, 4]), `x-omni-deadline-ms: ${value}\r\n`),
      1,
    );
    expect(heard.statuses).toEqual([200]);
  });
});

describe('Transfer-Encoding with an empty list element', () => {
  // RFC 9110 5.6.1: empty list elements are ignored; node decodes these as chunked.
  it.each([', chunked', ',chunked', ',\r\nTransfer-Encoding: chunked'])(
    '%j is chunked: computed, 200',
    async (te) => {
      const { g, s } = await shared();
      const before = g.entered();
      const body = floats([1, 2, 3, 4]);
      const request = Buffer.concat([
        Buffer.from(
          'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
            `Transfer-Encoding: ${te}\r\n\r\n${body.length.toString(16)}\r\n`,
        ),
        body,
        Buffer.from('\r\n0\r\n\r\n'),
      ]);
      const heard = await pipelinedExchange(s.port, request, 1);
      expect(heard.statuses).toEqual([200]);
      expect(g.entered() - before).toBe(1);
    },
  );
});

describe('bytes after a request that closes its connection', () => {
  // RFC 9112 9.6: the server answers the request that asked to close and processes nothing
  // after it. llhttp reports the bytes after it as HPE_CLOSED_CONNECTION, an error about those
  // bytes, not about the request before them.
  it.each([
    ['Connection: close', 'HTTP/1.1', 'Connection: close\r\n'],
    ['HTTP/1.0 without keep-alive', 'HTTP/1.0', ''],
  ])(
    '%s, then another request: the first is answered as itself and computed, then the connection closes',
    async (_name, version, connection) => {
      const { g, s } = await shared();
      const body = floats([1, 2, 3, 4]);
      const first = Buffer.concat([
        Buffer.from(
          `POST /v1/linear ${version}\r\nHost: x\r\nContent-Type: application/octet-stream\r\n${connection}` +
            `Content-Length: ${body.length}\r\n\r\n`,
        ),
        body,
      ]);
      const before = g.lr.report();
      const heard = await pipelinedExchange(s.port, Buffer.concat([first, octetRequest(body)]), 2);
      await until(() => g.lr.report().depth === 0, 'the runtime to be idle');
      // Before: 400 OMNI_ERR_BAD_REQUEST (HPE_CLOSED_CONNECTION) for the first request, whose
      // work was aborted as if its client had left.
      expect(heard).toEqual({ statuses: [200], closed: true });
      expect(g.lr.report().completed - before.completed).toBe(1);
      expect(g.lr.report().aborted - before.aborted).toBe(0);
    },
  );
});
