/**
 * Each runtime series of ServeMetrics reads its own figure of the report. The other tests'
 * reports repeat values (units equal to depth, waiting and queued 0), so a series that read a
 * neighbouring figure passed; here every figure is a different prime.
 */
import { describe, expect, it } from 'vitest';
import type { RuntimeReport } from '../src/runtime/report.js';
import { ServeMetrics } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';

const report: RuntimeReport = {
  ...{ state: 'draining', depth: 2, capacity: 3, rejected: 5, units: 7, unitCapacity: 11 },
  ...{ waiting: 13, leaked: 0, queued: 17, running: 19 },
  runTimeMs: { p50: 23, p99: 29, max: 31 },
  waitTimeMs: { p50: 37, p99: 41, max: 43 },
  ...{ completed: 47, failed: 53, aborted: 59, deadline: 61, refused: 67, invalid: 71, unavailable: 73 },
};

describe('ServeMetrics: every runtime figure in its own series', () => {
  it('reads each series from its own field of the report', async () => {
    const metrics = new ServeMetrics({ report: () => report, inflight: () => 79, connections: () => 83 });
    const { text } = await metrics.scrape();
    const expected: Record<string, number> = {
      omni_runtime_depth: 2,
      omni_runtime_capacity: 3,
      omni_runtime_rejected_total: 5,
      omni_runtime_units: 7,
      omni_runtime_unit_capacity: 11,
      omni_runtime_waiting: 13,
      omni_runtime_queued: 17,
      omni_runtime_running: 19,
      'omni_runtime_run_time_ms{quantile="0.5"}': 23,
      'omni_runtime_run_time_ms{quantile="0.99"}': 29,
      'omni_runtime_run_time_ms{quantile="1"}': 31,
      'omni_runtime_wait_time_ms{quantile="0.5"}': 37,
      'omni_runtime_wait_time_ms{quantile="0.99"}': 41,
      'omni_runtime_wait_time_ms{quantile="1"}': 43,
      'omni_runtime_calls_total{outcome="completed"}': 47,
      'omni_runtime_calls_total{outcome="failed"}': 53,
      'omni_runtime_calls_total{outcome="aborted"}': 59,
      'omni_runtime_calls_total{outcome="deadline"}': 61,
      'omni_runtime_calls_total{outcome="refused"}': 67,
      'omni_runtime_calls_total{outcome="invalid"}': 71,
      'omni_runtime_calls_total{outcome="unavailable"}': 73,
      omni_http_inflight: 79,
      omni_http_connections: 83,
      'omni_runtime_state{state="starting"}': 0,
      'omni_runtime_state{state="ready"}': 0,
      'omni_runtime_state{state="draining"}': 1,
      'omni_runtime_state{state="stopped"}': 0,
      'omni_runtime_state{state="failed"}': 0,
    };
    const seen = Object.fromEntries(Object.keys(expected).map((series) => [series, sample(text, series)]));
    expect(seen).toEqual(expected);
  });

  it('counts a scrape after the report went down as the report says (a counter that is reset each time)', async () => {
    let rejected = 5;
    const metrics = new ServeMetrics({ report: () => ({ ...report, rejected }), inflight: () => 0 });
    await metrics.scrape();
    rejected = 6;
    expect(sample((await metrics.scrape()).text, 'omni_runtime_rejected_total')).toBe(6);
  });

  it('records request latency in seconds, in buckets from half a millisecond up', async () => {
    const metrics = new ServeMetrics({ report: () => report, inflight: () => 0 });
    metrics.observe('/v1/linear', 'POST', 200, 0.0004);
    metrics.observe('/v1/linear', 'POST', 200, 0.003);
    const { text } = await metrics.scrape();
    const series = (le: string) =>
      sample(
        text,
        `omni_http_request_duration_seconds_bucket{le="${le}",route="/v1/linear",method="POST",status="200"}`,
      );
    expect([series('0.0005'), series('0.0025'), series('0.005'), series('+Inf')]).toEqual([1, 1, 2, 2]);
    const sum = sample(
      text,
      'omni_http_request_duration_seconds_sum{route="/v1/linear",method="POST",status="200"}',
    );
    expect(sum).toBeCloseTo(0.0034, 9);
  });
});
