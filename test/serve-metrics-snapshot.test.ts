/**
 * One scrape of /metrics reads the runtime's report once: every gauge and counter in it then
 * describes the same moment (depth, queued and running that add up), and the next scrape reads
 * afresh.
 */
import { describe, expect, it } from 'vitest';
import type { RuntimeReport } from '../src/runtime/report.js';
import { ServeMetrics } from '../src/serve/metrics.js';
import { sample } from './fixtures/metrics-text.js';

function reportWith(depth: number): RuntimeReport {
  const latency = { p50: 1, p99: 2, max: 3 };
  return {
    ...{ state: 'ready', depth, capacity: 8, rejected: 0, units: depth, unitCapacity: 64 },
    ...{ waiting: 0, leaked: 0, queued: 0, running: depth, waitTimeMs: latency, runTimeMs: latency },
    ...{ completed: 0, failed: 0, aborted: 0, deadline: 0, refused: 0, invalid: 0, unavailable: 0 },
  };
}

describe('a /metrics scrape', () => {
  it('reads the report once, and each scrape reads its own', async () => {
    let reads = 0;
    const metrics = new ServeMetrics({ report: () => reportWith(++reads), inflight: () => 0 });
    const first = await metrics.scrape();
    expect(reads).toBe(1);
    // Every series from that one read: depth and running both say 1.
    expect(first.text).toMatch(/^omni_runtime_depth 1$/m);
    expect(first.text).toMatch(/^omni_runtime_running 1$/m);
    const second = await metrics.scrape();
    expect(reads).toBe(2);
    expect(second.text).toMatch(/^omni_runtime_depth 2$/m);
    expect(second.text).toMatch(/^omni_runtime_running 2$/m);
  });

  it('its registry read directly (merged into an application registry) reads the report afresh', async () => {
    let reads = 0;
    const metrics = new ServeMetrics({ report: () => reportWith(++reads), inflight: () => 0 });
    await metrics.scrape();
    // Outside a scrape each series reads the report itself: never the last scrape's moment
    // (depth 1). Which later read the depth series gets depends on the series' order.
    expect(sample(await metrics.registry.metrics(), 'omni_runtime_depth')).toBeGreaterThan(1);
    expect(reads).toBeGreaterThan(1);
  });

  it("calls the source's methods on the source: a class instance's report, inflight and connections", async () => {
    class Source {
      readonly #depth = 5;
      report(): RuntimeReport {
        return reportWith(this.#depth);
      }
      inflight(): number {
        return this.#depth + 1;
      }
      connections(): number {
        return this.#depth + 2;
      }
    }
    const metrics = new ServeMetrics(new Source());
    const { text } = await metrics.scrape();
    expect(sample(text, 'omni_runtime_depth')).toBe(5);
    expect(sample(text, 'omni_http_inflight')).toBe(6);
    expect(sample(text, 'omni_http_connections')).toBe(7);
    // Outside a scrape, the report series read the source's report themselves.
    expect(sample(await metrics.registry.metrics(), 'omni_runtime_depth')).toBe(5);
  });

  it("reads the source's report once, at construction: a registry read directly calls that one", async () => {
    let gets = 0;
    const source = {
      get report(): () => RuntimeReport {
        gets++;
        return () => reportWith(3);
      },
      inflight: () => 0,
    };
    const metrics = new ServeMetrics(source);
    expect(sample(await metrics.registry.metrics(), 'omni_runtime_depth')).toBe(3);
    expect(gets).toBe(1);
  });
});
