/**
 * close() is drain() with the server's drainTimeoutMs, and begins the drain the same way: an
 * upload to an unknown path stalled since before it is answered 404 then, its body unread. Only
 * drain() was checked (serve-drain-unknown-path); a close() that began the drain without
 * answering it waited for a body that never came, to the drain's timeout (444, not clean).
 */
import { afterEach, expect, it } from 'vitest';
import type { ServeHandle } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { closeServed, listeningClient, startServed } from './fixtures/serve-harness.js';

afterEach(closeServed);

async function inflight(s: ServeHandle): Promise<number | undefined> {
  return sample((await s.metrics.scrape()).text, 'omni_http_inflight');
}

it('close(): an upload to an unknown path stalled since before it is answered 404, the drain clean', async () => {
  const { s } = await startServed(
    { inFeatures: 4, outFeatures: 2, threads: 1, open: true },
    { drainTimeoutMs: 600_000 },
  );
  const client = listeningClient(s.port);
  const head =
    'POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 64\r\n\r\n';
  client.socket.write(Buffer.concat([Buffer.from(head), Buffer.alloc(16)]));
  await until(async () => (await inflight(s)) === 1, 'the upload to be routed');
  const closed = s.close();
  await until(() => client.heard().includes('HTTP/1.1 404'), 'the 404');
  expect(client.heard()).toMatch(/\r\nconnection: close\r\n/i);
  expect(client.heard()).toContain('"code":"OMNI_ERR_NOT_FOUND"');
  expect(await closed).toEqual({ clean: true, abandonedRequests: 0 });
});
