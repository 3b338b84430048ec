/**
 * What a ServeMetrics source's report() and inflight() answer is the caller's: a value that is no
 * report, or a figure that is no number, fails the scrape with a code (it failed uncoded, with
 * prom-client's TypeError or a property read of null), and GET /metrics answers it as the
 * server's own failure: 500 OMNI_ERR_INTERNAL, the server serving on.
 */
import { describe, expect, it } from 'vitest';
import type { RuntimeReport } from '../src/runtime/report.js';
import { ServeMetrics, serve } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { reportingServed } from './fixtures/reporting-served.js';

function goodReport(): RuntimeReport {
  const latency = { p50: 1, p99: 2, max: 3 };
  return {
    ...{ state: 'ready', depth: 2, capacity: 8, rejected: 0, units: 2, unitCapacity: null },
    ...{ waiting: 0, leaked: 0, queued: 0, running: 2, waitTimeMs: latency, runTimeMs: latency },
    ...{ completed: 0, failed: 0, aborted: 0, deadline: 0, refused: 0, invalid: 0, unavailable: 0 },
  };
}

const GARBAGE: Array<[string, () => unknown]> = [
  ['a number', () => 5],
  ['null', () => null],
  ['an empty object', () => ({})],
  ['no depth', () => ({ ...goodReport(), depth: undefined })],
  ['a depth given as a string', () => ({ ...goodReport(), depth: '2' })],
  ['a bigint rejected count', () => ({ ...goodReport(), rejected: 1n })],
  ['no completed count', () => ({ ...goodReport(), completed: undefined })],
  ['a negative rejected count', () => ({ ...goodReport(), rejected: -1 })],
  ['an infinite failed count', () => ({ ...goodReport(), failed: Number.POSITIVE_INFINITY })],
  ['no run time summary', () => ({ ...goodReport(), runTimeMs: undefined })],
  ['a wait time summary without p99', () => ({ ...goodReport(), waitTimeMs: { p50: 1, max: 2 } })],
  ['no state', () => ({ ...goodReport(), state: undefined })],
];

async function scrapeCode(metrics: ServeMetrics): Promise<unknown> {
  try {
    await metrics.scrape();
    return 'scraped';
  } catch (err) {
    return (err as { code?: unknown }).code;
  }
}

describe('a ServeMetrics source that answers garbage', () => {
  it.each(GARBAGE)(
    'report() giving %s: scrape() rejects OMNI_ERR_INVALID_ARGUMENT',
    async (_what, report) => {
      const metrics = new ServeMetrics({ report: report as () => RuntimeReport, inflight: () => 0 });
      expect(await scrapeCode(metrics)).toBe('OMNI_ERR_INVALID_ARGUMENT');
      // Read directly (merged into an application's registry), the same.
      let code: unknown;
      await metrics.registry.metrics().catch((err: { code?: unknown }) => {
        code = err.code;
      });
      expect(code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    },
  );

  it('inflight() or connections() giving no number: scrape() rejects OMNI_ERR_INVALID_ARGUMENT', async () => {
    const inflight = new ServeMetrics({ report: goodReport, inflight: () => undefined as never });
    expect(await scrapeCode(inflight)).toBe('OMNI_ERR_INVALID_ARGUMENT');
    const connections = new ServeMetrics({
      report: goodReport,
      inflight: () => 0,
      connections: () => '1' as never,
    });
    expect(await scrapeCode(connections)).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it("NaN is a number, Prometheus's own 'no value': scraped as NaN; null capacities as +Inf", async () => {
    const metrics = new ServeMetrics({
      report: () => ({ ...goodReport(), depth: Number.NaN, rejected: Number.NaN }),
      inflight: () => 0,
    });
    const { text } = await metrics.scrape();
    expect(text).toMatch(/^omni_runtime_depth Nan$/m);
    // A counter's too: NaN is neither negative nor infinite.
    expect(text).toMatch(/^omni_runtime_rejected_total Nan$/m);
    expect(text).toMatch(/^omni_runtime_unit_capacity \+Inf$/m);
  });

  it('a report() that throws: its own error, as it threw it', async () => {
    const own = new Error('the caller’s');
    const metrics = new ServeMetrics({
      report: () => {
        throw own;
      },
      inflight: () => 0,
    });
    await expect(metrics.scrape()).rejects.toBe(own);
  });

  it('GET /metrics: 500 OMNI_ERR_INTERNAL for each, and the server serves on', async () => {
    let answer: () => unknown = goodReport;
    const served = reportingServed(() => answer());
    const handle = await serve(served, { host: '127.0.0.1', port: 0, closeRuntime: false });
    try {
      const got: string[] = [];
      for (const [what, report] of [
        ...GARBAGE,
        [
          'a throwing getter',
          () => ({
            ...goodReport(),
            get depth(): number {
              throw new Error('boom');
            },
          }),
        ],
      ] as Array<[string, () => unknown]>) {
        answer = report;
        const res = await handle.app.inject({ method: 'GET', url: '/metrics' });
        const code = res.statusCode === 200 ? 'none' : (res.json() as { code?: unknown }).code;
        if (res.statusCode !== 500 || code !== 'OMNI_ERR_INTERNAL')
          got.push(`${what}: ${res.statusCode} ${code}`);
      }
      expect(got).toEqual([]);
      answer = goodReport;
      const res = await handle.app.inject({ method: 'GET', url: '/metrics' });
      expect(res.statusCode).toBe(200);
      expect(sample(res.body, 'omni_runtime_depth')).toBe(2);
    } finally {
      await handle.drain({ timeoutMs: 10_000 });
    }
  });
});
