/**
 * report()'s latency summaries are piscina's figures, each in its own field: its histograms
 * stood in here by fixed summaries, since real calls take whatever time they take, and a p50
 * that read the p99 (or a run time that read the wait time) went unseen with one call's figures.
 */
import { describe, expect, it } from 'vitest';
import type { AdmissionReport } from '../src/admission/index.js';
import { noOutcomes } from '../src/runtime/pending-task.js';
import { frozenCounts, type PoolCounts, runtimeReport } from '../src/runtime/report.js';

const admission: AdmissionReport = {
  depth: 0,
  capacity: 4,
  rejected: 0,
  units: 0,
  unitCapacity: null,
  waiting: 0,
  leaked: 0,
};

const pool: PoolCounts = {
  histogram: {
    waitTime: { p50: 1, p99: 2, max: 3 },
    runTime: { p50: 10, p99: 20, max: 30 },
  },
};

describe('latency summaries', () => {
  it('runtimeReport reads each percentile of each histogram into its own field', () => {
    const report = runtimeReport('ready', admission, true, pool, 0, 0, noOutcomes());
    expect(report.waitTimeMs).toEqual({ p50: 1, p99: 2, max: 3 });
    expect(report.runTimeMs).toEqual({ p50: 10, p99: 20, max: 30 });
  });

  it('frozenCounts keeps each histogram as it was', () => {
    const report = runtimeReport('draining', admission, true, frozenCounts(pool), 0, 0, noOutcomes());
    expect(report.waitTimeMs).toEqual({ p50: 1, p99: 2, max: 3 });
    expect(report.runTimeMs).toEqual({ p50: 10, p99: 20, max: 30 });
  });

  it('before any call (no histogram yet): all 0', () => {
    const empty: PoolCounts = { histogram: { waitTime: undefined, runTime: undefined } };
    const report = runtimeReport('ready', admission, true, empty, 0, 0, noOutcomes());
    expect(report.waitTimeMs).toEqual({ p50: 0, p99: 0, max: 0 });
    expect(report.runTimeMs).toEqual({ p50: 0, p99: 0, max: 0 });
  });
});
