/**
 * The source checks (metric-figures.ts) refuse what no report is; what a runtime really reports,
 * in each documented shape, must still scrape: request-only admission (unitCapacity null), the
 * unbounded serial scheduler (capacity null too), a closed runtime's report, counts near 2^53,
 * NaN counts (Prometheus's "no value") and null summaries refused coded, not with a TypeError.
 */
import { describe, expect, it } from 'vitest';
import { LinearRuntime } from '../src/index.js';
import type { RuntimeReport } from '../src/runtime/report.js';
import { ServeMetrics } from '../src/serve/metrics.js';
import { sample } from './fixtures/metrics-text.js';

/** A series' value as exposed ('+Inf', 'Nan', '2'). */
function exposed(text: string, series: string): string | undefined {
  return text
    .split('\n')
    .find((line) => line.startsWith(`${series} `))
    ?.slice(series.length + 1);
}

async function scraped(report: () => unknown): Promise<string> {
  const metrics = new ServeMetrics({ report: report as () => RuntimeReport, inflight: () => 0 });
  return (await metrics.scrape()).text;
}

describe("a runtime's own reports scrape", () => {
  it.each([
    ['request-only admission', { admission: { requests: 2 } }, '2'],
    ['no admission (the serial scheduler)', {}, '+Inf'],
  ] as const)('%s: running, then closed', async (_what, options, capacity) => {
    const lr = await LinearRuntime.start({
      backend: 'fixture',
      threads: 1,
      inFeatures: 2,
      outFeatures: 2,
      ...options,
    });
    try {
      await lr.run(new Float32Array([1, 2]));
      const live = await scraped(() => lr.report());
      expect(exposed(live, 'omni_runtime_unit_capacity')).toBe('+Inf');
      expect(exposed(live, 'omni_runtime_capacity')).toBe(capacity);
      expect(sample(live, 'omni_runtime_calls_total{outcome="completed"}')).toBe(1);
    } finally {
      await lr.close();
    }
    const closed = await scraped(() => lr.report());
    expect(sample(closed, 'omni_runtime_state{state="stopped"}')).toBe(1);
    expect(sample(closed, 'omni_runtime_calls_total{outcome="completed"}')).toBe(1);
  });
});

describe('figures at the edges of what a source may say', () => {
  const latency = { p50: 0, p99: 0, max: 0 };
  const report = (over: Record<string, unknown>) => ({
    ...{ state: 'ready', depth: 0, capacity: null, rejected: 0, units: 0, unitCapacity: null },
    ...{ waiting: 0, leaked: 0, queued: 0, running: 0, waitTimeMs: latency, runTimeMs: latency },
    ...{ completed: 0, failed: 0, aborted: 0, deadline: 0, refused: 0, invalid: 0, unavailable: 0 },
    ...over,
  });

  it('counts near 2^53 scrape as themselves', async () => {
    const big = Number.MAX_SAFE_INTEGER;
    const text = await scraped(() => report({ rejected: big, completed: big + 1, depth: big }));
    expect(sample(text, 'omni_runtime_rejected_total')).toBe(big);
    expect(sample(text, 'omni_runtime_calls_total{outcome="completed"}')).toBe(big + 1);
    expect(sample(text, 'omni_runtime_depth')).toBe(big);
  });

  it("a NaN count is Prometheus's 'no value', scraped as NaN, as a NaN gauge is", async () => {
    const text = await scraped(() => report({ rejected: Number.NaN, failed: Number.NaN }));
    expect(exposed(text, 'omni_runtime_rejected_total')).toBe('Nan');
    expect(exposed(text, 'omni_runtime_calls_total{outcome="failed"}')).toBe('Nan');
  });

  it('a null latency summary, or one missing a quantile: OMNI_ERR_INVALID_ARGUMENT, not a TypeError', async () => {
    const summaries = [null, { p99: 0, max: 0 }, { p50: 0, p99: 0 }, { p50: 0, p99: 0, max: '1' }];
    for (const field of ['waitTimeMs', 'runTimeMs']) {
      for (const summary of summaries) {
        const code = await scraped(() => report({ [field]: summary })).catch(
          (err: { code?: unknown }) => err.code,
        );
        expect({ field, summary, code }).toEqual({ field, summary, code: 'OMNI_ERR_INVALID_ARGUMENT' });
      }
    }
  });
});
