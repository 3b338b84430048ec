/** GET /health and GET /metrics of a real server: readiness, never admission-gated, per-server registry. */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { get, postFloats, rawExchange } from './fixtures/serve-client.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import {
  closeServed,
  type Gated,
  type GatedOptions,
  servers,
  startServed,
} from './fixtures/serve-harness.js';

afterEach(closeServed);

async function start(options: GatedOptions): Promise<{ g: Gated; url: string }> {
  const { g, s } = await startServed({ inFeatures: 2, outFeatures: 2, ...options });
  return { g, url: s.address };
}

/** The value of one sample line (`name{labels} value`) in Prometheus text. */

describe('GET /health', () => {
  it('reports the runtime exactly, 200 when ready, and stays answerable at full capacity', async () => {
    const { g, url } = await start({ threads: 1, admission: { requests: 1, units: 8 } });
    const idle = await get(url, '/health');
    expect(idle.status).toBe(200);
    expect(idle.json).toEqual({
      state: 'ready',
      depth: 0,
      capacity: 1,
      rejected: 0,
      units: 0,
      unitCapacity: 8,
      waiting: 0,
    });

    const held = postFloats(url, [1, 2, 3, 4]);
    await g.reach(ENTERED, 1);
    for (let i = 0; i < 3; i++) {
      const full = await get(url, '/health');
      expect(full.status).toBe(200);
      // Health takes no capacity and is never counted as a refusal.
      expect(full.json).toEqual({
        state: 'ready',
        depth: 1,
        capacity: 1,
        rejected: 0,
        units: 2,
        unitCapacity: 8,
        waiting: 0,
      });
    }
    g.open();
    expect((await held).status).toBe(200);
  });
});

describe('GET /metrics', () => {
  it('Prometheus text: depth, capacity, units, state, refusals by reason, latency histograms', async () => {
    const { g, url } = await start({ threads: 1, admission: { requests: 1 } });
    const held = postFloats(url, [1, 2]);
    await g.reach(ENTERED, 1);
    const refused = await Promise.all([1, 2, 3].map(() => postFloats(url, [1, 2])));
    expect(refused.map((a) => a.status)).toEqual([503, 503, 503]);

    const during = await get(url, '/metrics');
    expect(during.status).toBe(200);
    // The exposition format's own type, its version with it (prom-client's registry's), which
    // a scraper reads to choose its parser.
    expect(during.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4(;|$)/);
    const text = Buffer.from(during.bytes).toString('utf8');
    expect(sample(text, 'omni_runtime_depth')).toBe(1);
    expect(sample(text, 'omni_runtime_capacity')).toBe(1);
    // Request-only mode does no unit accounting.
    expect(sample(text, 'omni_runtime_units')).toBe(0);
    expect(text).toContain('omni_runtime_unit_capacity +Inf');
    expect(sample(text, 'omni_runtime_state{state="ready"}')).toBe(1);
    expect(sample(text, 'omni_runtime_state{state="draining"}')).toBe(0);
    expect(sample(text, 'omni_runtime_rejected_total')).toBe(3);
    expect(sample(text, 'omni_http_refused_total{reason="requests",status="503"}')).toBe(3);
    expect(
      sample(text, 'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="503"}'),
    ).toBe(3);

    g.open();
    expect((await held).status).toBe(200);
    const after = Buffer.from((await get(url, '/metrics')).bytes).toString('utf8');
    expect(sample(after, 'omni_runtime_depth')).toBe(0);
    expect(sample(after, 'omni_runtime_calls_total{outcome="completed"}')).toBe(1);
    expect(
      sample(
        after,
        'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="200"}',
      ),
    ).toBe(1);
    expect(
      sample(
        after,
        'omni_http_request_duration_seconds_bucket{le="+Inf",route="/v1/linear",method="POST",status="200"}',
      ),
    ).toBe(1);
  });

  it('a client that leaves mid-call is a 499 in the latency histogram, and aborted in calls_total', async () => {
    const { g, url } = await start({ threads: 1, admission: { requests: 2 } });
    const body = Buffer.from(new Float32Array([1, 2]).buffer);
    const client = request(`${url}/v1/linear`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
    });
    client.on('error', () => {}); // destroyed on purpose below
    client.end(body);
    await g.reach(ENTERED, 1);
    client.destroy();
    await until(() => g.lr.report().aborted === 1, 'the abort to reach the runtime');
    g.open();
    await until(() => g.lr.report().depth === 0, 'the work to end');
    const text = Buffer.from((await get(url, '/metrics')).bytes).toString('utf8');
    expect(
      sample(text, 'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="499"}'),
    ).toBe(1);
    expect(sample(text, 'omni_runtime_calls_total{outcome="aborted"}')).toBe(1);
    // The help text names the summary it describes.
    expect(text).toMatch(/# HELP omni_runtime_wait_time_ms piscina's queue wait time/);
    expect(text).toMatch(/# HELP omni_runtime_run_time_ms piscina's run time/);
  });

  it('a routed request whose chunked body cannot be parsed is a 400 in the histogram, not a 499', async () => {
    const { url } = await start({ open: true, threads: 1, admission: { requests: 2 } });
    const head =
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
      'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n';
    const chunk = Buffer.from(new Float32Array([1, 2]).buffer);
    const answer = await rawExchange(Number(new URL(url).port), [
      `${head}${chunk.length.toString(16)}\r\n`,
      chunk,
      '\r\nQQ\r\n', // not a chunk size: the parser fails after the route has the request
    ]);
    expect(answer.status).toBe(400);
    const series = (status: number): string =>
      `omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="${status}"}`;
    // The server records it when the response closes, which may follow the client's close.
    let text = '';
    for (let i = 0; i < 200 && sample(text, series(400)) !== 1; i++) {
      text = Buffer.from((await get(url, '/metrics')).bytes).toString('utf8');
    }
    expect(sample(text, series(400))).toBe(1);
    expect(sample(text, series(499))).toBeUndefined();
  });

  it.each([
    ['closes its side', (c: Socket) => c.end()],
    ['closes the connection', (c: Socket) => c.destroy()],
  ])(
    'a client that %s mid-upload, behind its own call still running: both 499, the call aborted',
    async (_name, leave) => {
      const { g, url } = await start({ threads: 1, admission: { requests: 2 } });
      const port = Number(new URL(url).port);
      const head = (length: number): string =>
        `POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${length}\r\n\r\n`;
      const client = connect({ host: '127.0.0.1', port });
      client.on('error', () => {}); // the server may reset it
      await new Promise((resolve) => client.once('connect', resolve));
      // A whole request, then one whose body stops after 4 of its 16 bytes.
      client.write(Buffer.concat([Buffer.from(head(8)), Buffer.from(new Float32Array([1, 2]).buffer)]));
      client.write(`${head(16)}abcd`);
      await g.reach(ENTERED, 1);
      const inflight = async (): Promise<number | undefined> =>
        sample((await servers.at(-1)!.metrics.scrape()).text, 'omni_http_inflight');
      await until(async () => (await inflight()) === 2, 'both requests routed');
      leave(client);
      // Before: the FIN in the middle of a request went to the client-error handler, which waited
      // to answer it 400 after the call: the call ran on for nobody, recorded 200, the truncated
      // one 400 and a client error, and the connection stayed open until a server timeout.
      await until(() => g.lr.report().aborted === 1, 'the abort to reach the runtime');
      g.open();
      await until(() => g.lr.report().depth === 0, 'the work to end');
      await until(async () => (await inflight()) === 0, 'both requests closed');
      const text = (await servers.at(-1)!.metrics.scrape()).text;
      const series = (status: number): string =>
        `omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="${status}"}`;
      expect([sample(text, series(499)), sample(text, series(200)), sample(text, series(400))]).toEqual([
        2,
        undefined,
        undefined,
      ]);
      expect(text).not.toMatch(/omni_http_client_errors_total\{/);
    },
  );

  it('each server has its own registry', async () => {
    const a = await start({ threads: 1, admission: { requests: 1 } });
    const b = await start({ open: true, threads: 1, admission: { requests: 3 } });
    const held = postFloats(a.url, [1, 2]);
    await a.g.reach(ENTERED, 1);
    expect((await postFloats(a.url, [1, 2])).status).toBe(503);
    const text = Buffer.from((await get(b.url, '/metrics')).bytes).toString('utf8');
    expect(sample(text, 'omni_runtime_capacity')).toBe(3);
    expect(sample(text, 'omni_runtime_rejected_total')).toBe(0);
    expect(text).not.toContain('omni_http_refused_total{');
    a.g.open();
    expect((await held).status).toBe(200);
  });
});
