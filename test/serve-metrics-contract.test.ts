/**
 * GET /metrics beyond serve-metrics.test.ts: every runtime gauge and the in-flight gauge, 413
 * refusals by reason, client errors by parser code, counters that mirror the runtime (equal on
 * every scrape, never summed), the latency summaries, and a bounded route label for unknown
 * URLs. Capacity is held at the fixture worker's gate.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RuntimeReport } from '../src/runtime/report.js';
import type { ServeHandle, ServeOptions } from '../src/serve/index.js';
import { ServeMetrics } from '../src/serve/metrics.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { get, postFloats, rawExchange } from './fixtures/serve-client.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import { closeServed, type Gated, type GatedOptions, startServed } from './fixtures/serve-harness.js';

afterEach(closeServed);

async function start(gated: GatedOptions, options: ServeOptions = {}): Promise<{ g: Gated; s: ServeHandle }> {
  return startServed({ inFeatures: 2, outFeatures: 2, threads: 1, ...gated }, options);
}

async function scrape(s: ServeHandle): Promise<string> {
  const a = await get(s.address, '/metrics');
  expect(a.status).toBe(200);
  return Buffer.from(a.bytes).toString('utf8');
}

describe('GET /metrics', () => {
  it('depth, running, queued, waiting and in-flight requests while calls are held', async () => {
    const { g, s } = await start({ admission: { requests: 3 } });
    const held = [0, 1, 2].map((i) => postFloats(s.address, [i, 1]));
    await g.reach(ENTERED, 1);
    await until(() => g.lr.report().depth === 3, 'three admitted calls');
    // Read in-process: a GET /metrics would count itself in flight.
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, 'omni_runtime_depth')).toBe(3);
    expect(sample(text, 'omni_runtime_running')).toBe(1);
    expect(sample(text, 'omni_runtime_queued')).toBe(2);
    expect(sample(text, 'omni_runtime_waiting')).toBe(0);
    expect(sample(text, 'omni_http_inflight')).toBe(3);
    g.open();
    expect((await Promise.all(held)).map((a) => a.status)).toEqual([200, 200, 200]);
  });

  it('413 refusals are counted by reason: body-too-large and too-large', async () => {
    const { g, s } = await start({ open: true, admission: { requests: 2, units: 2 } }, { bodyLimit: 64 });
    const body = await postFloats(s.address, new Float32Array(32));
    expect(body.status).toBe(413);
    const cost = await postFloats(s.address, [1, 2, 3, 4, 5, 6]);
    expect(cost.status).toBe(413);
    const text = await scrape(s);
    expect(sample(text, 'omni_http_refused_total{reason="body-too-large",status="413"}')).toBe(1);
    expect(sample(text, 'omni_http_refused_total{reason="too-large",status="413"}')).toBe(1);
    expect(g.entered()).toBe(0);
  });

  it('runtime counters mirror report() on every scrape (deadline and refused outcomes included)', async () => {
    const { g, s } = await start({ admission: { requests: 2 } });
    const held = postFloats(s.address, [1, 2]);
    await g.reach(ENTERED, 1);
    // Queued behind the gate, then past its deadline: 504, and skipped by the worker.
    const late = await postFloats(s.address, [1, 2], { headers: { 'x-omni-deadline-ms': '1' } });
    expect(late.status).toBe(504);
    // Both calls hold capacity: refused.
    expect((await postFloats(s.address, [1, 2])).status).toBe(503);
    g.open();
    expect((await held).status).toBe(200);
    await until(() => g.lr.report().depth === 0, 'the work to end');
    for (let i = 0; i < 2; i++) {
      const text = await scrape(s);
      expect(sample(text, 'omni_runtime_rejected_total')).toBe(1);
      expect(sample(text, 'omni_runtime_calls_total{outcome="completed"}')).toBe(1);
      expect(sample(text, 'omni_runtime_calls_total{outcome="deadline"}')).toBe(1);
      expect(sample(text, 'omni_runtime_calls_total{outcome="refused"}')).toBe(1);
    }
  });

  it('calls_total has a series for every outcome report() counts, each equal to it', async () => {
    // Distinct counts, so a series dropped or read from the wrong field shows.
    const outcomes = {
      completed: 1,
      failed: 2,
      aborted: 3,
      deadline: 4,
      refused: 5,
      invalid: 6,
      unavailable: 7,
    };
    const latency = { p50: 0, p99: 0, max: 0 };
    const report: RuntimeReport = {
      ...{ state: 'ready', depth: 0, capacity: 1, rejected: 0, units: 0, unitCapacity: null, waiting: 0 },
      ...{ leaked: 0, queued: 0, running: 0, waitTimeMs: latency, runTimeMs: latency, ...outcomes },
    };
    const text = (await new ServeMetrics({ report: () => report, inflight: () => 0 }).scrape()).text;
    for (const [outcome, count] of Object.entries(outcomes)) {
      expect(sample(text, `omni_runtime_calls_total{outcome="${outcome}"}`)).toBe(count);
    }
  });

  it('the run and wait time summaries are the runtime report’s', async () => {
    const { g, s } = await start({ admission: { requests: 2 } });
    // One call held at the gate while the server answers others, then 150 quick ones: the
    // median, the 99th percentile and the maximum of the run times then differ.
    const held = postFloats(s.address, [1, 2]);
    await g.reach(ENTERED, 1);
    for (let i = 0; i < 3; i++) await scrape(s);
    g.open();
    expect((await held).status).toBe(200);
    for (let i = 0; i < 150; i++) await g.lr.run(new Float32Array([i, 1]));
    const text = (await s.metrics.scrape()).text;
    const { runTimeMs, waitTimeMs } = g.lr.report();
    for (const [name, summary] of [
      ['omni_runtime_run_time_ms', runTimeMs],
      ['omni_runtime_wait_time_ms', waitTimeMs],
    ] as const) {
      expect(sample(text, `${name}{quantile="0.5"}`)).toBe(summary.p50);
      expect(sample(text, `${name}{quantile="0.99"}`)).toBe(summary.p99);
      expect(sample(text, `${name}{quantile="1"}`)).toBe(summary.max);
    }
  });

  it('connections closed for malformed HTTP are counted by parser code (Expect included)', async () => {
    const { g, s } = await start({ open: true, admission: { requests: 2 } });
    const chunk = Buffer.from(new Float32Array([1, 2]).buffer);
    const chunked = await rawExchange(s.port, [
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
        'Transfer-Encoding: chunked\r\n\r\n',
      `${chunk.length.toString(16)}\r\n`,
      chunk,
      '\r\nQQ\r\n',
    ]);
    expect(chunked.status).toBe(400);
    const expectation = await rawExchange(s.port, [
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\nContent-Length: 0\r\n\r\n',
    ]);
    expect(expectation.status).toBe(417);
    const headers = await rawExchange(s.port, [
      `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`,
    ]);
    expect(headers.status).toBe(431);
    const text = await scrape(s);
    expect(sample(text, 'omni_http_client_errors_total{detail="HPE_INVALID_CHUNK_SIZE"}')).toBe(1);
    expect(sample(text, 'omni_http_client_errors_total{detail="EXPECTATION_FAILED"}')).toBe(1);
    expect(sample(text, 'omni_http_client_errors_total{detail="HPE_HEADER_OVERFLOW"}')).toBe(1);
    // A request node parsed whole, unlike the others: in the latency histogram too, as a URL
    // fastify refuses before routing is.
    expect(
      sample(text, 'omni_http_request_duration_seconds_count{route="unmatched",method="POST",status="417"}'),
    ).toBe(1);
    expect(g.entered()).toBe(0);
  });

  it('an unknown URL is labelled "unmatched" in the latency histogram, never by its path', async () => {
    const { s } = await start({ open: true, admission: { requests: 2 } });
    for (const path of ['/v2/nothing', '/v2/nothing?x=1', '/another']) {
      expect((await get(s.address, path)).status).toBe(404);
    }
    const text = await scrape(s);
    expect(
      sample(text, 'omni_http_request_duration_seconds_count{route="unmatched",method="GET",status="404"}'),
    ).toBe(3);
    expect(text).not.toContain('route="/v2/nothing');
    expect(text).not.toContain('route="/another"');
  });
});

describe('new ServeMetrics(source)', () => {
  it.each([
    ['null', null],
    ['an object without inflight()', { report: () => ({}) }],
    ['an object whose report is no function', { report: 5, inflight: () => 0 }],
  ])('a source that is %s: OMNI_ERR_INVALID_ARGUMENT where it is made, not at a scrape', (_what, source) => {
    // Taken before, it failed every later scrape with an uncoded TypeError.
    let code: unknown;
    try {
      new ServeMetrics(source as unknown as ConstructorParameters<typeof ServeMetrics>[0]);
    } catch (err) {
      code = (err as { code?: unknown }).code;
    }
    expect(code).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });
});
