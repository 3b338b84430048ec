/**
 * A request routed before the answer ahead of it on its connection turned out to close that
 * connection: a JSON answer streamed to an HTTP/1.0 client has no length, so the connection
 * closes after it (docs/http.md), and a request the client pipelined behind it, already
 * routed and answered into node's buffer, is never sent. The server cut it off, not the client:
 * 444 in /metrics, not the 499 of a client that left (the client stayed to read to the end).
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import {
  closeServed,
  gatedForTest,
  healthBehindStreamedJson,
  listeningClient,
  serveForTest,
} from './fixtures/serve-harness.js';

afterEach(closeServed);

const OUT = 2;

describe('a request pipelined behind an answer that closes its connection once it is written', () => {
  it('HTTP/1.0, behind a streamed JSON answer: 444 (the server cut it off), not 499', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: OUT, threads: 1, admission: { requests: 2 } });
    const s = await serveForTest(g.lr);
    const responses: ServerResponse[] = [];
    s.app.server.on('request', (_req, res: ServerResponse) => responses.push(res));
    const client = listeningClient(s.port);
    const closed = new Promise<void>((resolve) => client.socket.once('close', () => resolve()));
    client.socket.write(healthBehindStreamedJson(OUT));
    // The call is held until the request behind it is answered into node's buffer.
    await g.reach(ENTERED, 1);
    await until(() => responses[1]?.headersSent === true, 'the /health answer to be written');
    g.open();
    await closed;
    // The client read to the end: the streamed answer, then the server's FIN, nothing after it.
    expect(client.heard().split('HTTP/1.1 ').length - 1).toBe(1);
    await until(
      async () => sample((await s.metrics.scrape()).text, 'omni_http_inflight') === 0,
      'both responses to close',
    );
    const text = (await s.metrics.scrape()).text;
    const health = (status: number): number | undefined =>
      sample(
        text,
        `omni_http_request_duration_seconds_count{route="/health",method="GET",status="${status}"}`,
      );
    expect({ cut: health(444), gone: health(499) }).toEqual({ cut: 1, gone: undefined });
    expect(
      sample(text, 'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="200"}'),
    ).toBe(1);
  });
});
