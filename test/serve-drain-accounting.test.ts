/**
 * A drain's accounting: every request the server received is in the metrics by the time
 * drain() (or close()) resolves, those the drain cut off (444) included, and the in-flight
 * gauge reads 0. An operator, or a process that exports a last snapshot, reads them right after
 * the await. The requests are held open by their clients (a stalled upload, an answer never
 * read, one pipelined behind it), seen arriving through the server's own gauge and events.
 */
import type { ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type ServeHandle, type ServeOptions, serve } from '../src/serve/index.js';
import { CUT_OFF_STATUS } from '../src/serve/metrics.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { clients, closeServed, gatedForTest } from './fixtures/serve-harness.js';

const IN = 4;
/** 256 rows of 16,384 floats: a 16 MiB answer, far more than loopback's socket buffers hold. */
const OUT = 16_384;
const ROWS = 256;

afterEach(closeServed);

async function start(options: ServeOptions = {}): Promise<ServeHandle> {
  const g = await gatedForTest({ inFeatures: IN, outFeatures: OUT, open: true, admission: { requests: 2 } });
  return serve(g.lr, { port: 0, sendTimeoutMs: Number.POSITIVE_INFINITY, ...options });
}

function client(s: ServeHandle): Socket {
  const c = connect({ host: '127.0.0.1', port: s.port });
  clients.push(c);
  c.on('error', () => {}); // the drain cuts it off on purpose
  return c;
}

function head(length: number): string {
  return (
    'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
    `Content-Length: ${length}\r\n\r\n`
  );
}

const series = (status: number): string =>
  `omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="${status}"}`;

async function inflight(s: ServeHandle): Promise<number | undefined> {
  return sample((await s.metrics.scrape()).text, 'omni_http_inflight');
}

describe('a drain that cuts requests off', () => {
  it('has recorded them (444) by the time it resolves: a stalled upload', async () => {
    const s = await start();
    // Headers and part of the body: the request is in flight, waiting for the rest.
    client(s).write(`${head(64)}${'\0'.repeat(16)}`);
    await until(async () => (await inflight(s)) === 1, 'the upload');
    const drained = s.drain({ timeoutMs: 600_000 });
    s.expireDrain();
    expect(await drained).toEqual({ clean: false, abandonedRequests: 1 });
    // Read at once: before, the 444 came a turn of the event loop after drain() resolved.
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, series(CUT_OFF_STATUS))).toBe(1);
    expect(sample(text, 'omni_http_inflight')).toBe(0);
  });

  it('has recorded them by the time close() resolves: an answer never read, one queued behind it', async () => {
    const s = await start();
    // The first answer is handed to its connection (16 MiB, never read), the second waits
    // behind it, unattached (pipelined-close.ts closes it with the connection).
    const queued = new Promise<void>((resolve) => {
      let seen = 0;
      s.app.server.on('request', (_req, res: ServerResponse) => {
        if (++seen === 1) res.once('prefinish', () => resolve());
      });
    });
    const c = client(s);
    c.pause();
    const body = Buffer.alloc(ROWS * IN * 4);
    c.write(head(body.length));
    c.write(body);
    c.write(head(IN * 4));
    c.write(Buffer.alloc(IN * 4));
    await queued;
    await until(async () => (await inflight(s)) === 2, 'the pipelined request');
    const closing = s.close();
    s.expireDrain();
    expect(await closing).toEqual({ clean: false, abandonedRequests: 2 });
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, series(CUT_OFF_STATUS))).toBe(2);
    expect(sample(text, series(200))).toBeUndefined();
    expect(sample(text, 'omni_http_inflight')).toBe(0);
  });
});
