/**
 * A request whose body node could not parse is answered from client-error.ts, written raw on
 * its connection, and recorded with that status when its response closes. A client that does
 * not read (its window full) leaves that answer in this process: a drain that then cuts the
 * connection off has not answered it.
 */
import type { Socket } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { serve } from '../src/serve/index.js';
import { CUT_OFF_STATUS } from '../src/serve/metrics.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { closeServed, gatedForTest, listeningClient, servers } from './fixtures/serve-harness.js';

afterEach(closeServed);

const series = (status: number): string =>
  `omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="${status}"}`;

it('a body that failed, its 400 never taken by the client, then cut off by the drain: 444', async () => {
  const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, open: true });
  const s = await serve(g.lr, { port: 0, sendTimeoutMs: Number.POSITIVE_INFINITY });
  servers.push(s);
  const accepted = new Promise<Socket>((resolve) => s.app.server.once('connection', resolve));
  const { socket: c, heard } = listeningClient(s.port);
  c.write(
    'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
      'Transfer-Encoding: chunked\r\n\r\n10\r\n',
  );
  c.write(Buffer.alloc(16));
  const connection = await accepted;
  await until(async () => sample((await s.metrics.scrape()).text, 'omni_http_inflight') === 1, 'the upload');
  // The client's window is full: nothing more leaves (the kernel takes no more of it).
  const held = connection as Socket & { _write: unknown; _writev: unknown };
  held._write = () => {};
  held._writev = () => {};
  const failed = new Promise<void>((resolve) => s.app.server.once('clientError', () => resolve()));
  c.write('\r\nQQ\r\n'); // not a chunk size
  await failed;
  expect(connection.writableLength).toBeGreaterThan(0);
  const drained = s.drain({ timeoutMs: 600_000 });
  s.expireDrain();
  expect(await drained).toEqual({ clean: false, abandonedRequests: 1 });
  expect(heard()).toBe('');
  const text = (await s.metrics.scrape()).text;
  // Before: recorded 400, an answer the client never got.
  expect([sample(text, series(400)), sample(text, series(CUT_OFF_STATUS))]).toEqual([undefined, 1]);
  expect(sample(text, 'omni_http_inflight')).toBe(0);
});
