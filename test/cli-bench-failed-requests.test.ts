/**
 * `omni-runtime bench` whose requests failed (neither refused nor late: a native error, a
 * runtime that failed and refuses every call after it) measured a broken runtime. It still
 * writes results.json and prints its table or summary, then fails with OMNI_ERR_BENCH (exit 1):
 * before, it exited 0, and a CI job running the benchmark passed on a runtime that had failed.
 * In-process, with the load replaced by a made-up result and the chart packages "not installed".
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBenchCommand } from '../src/cli/bench-command.js';
import type { BenchSummary } from '../src/cli/bench-report.js';
import type { BenchResult } from '../src/cli/bench-run.js';
import type { ImportPackage } from '../src/cli/chart-libraries.js';
import { benchPhase, benchResult } from './fixtures/bench-result.js';
import { captureOutputPerTest } from './fixtures/capture-output.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-bench-failed-');

/** The charts are skipped, as without the optional packages: only the results are written. */
const notInstalled: ImportPackage = async (name) => {
  throw Object.assign(new Error(`Cannot find package '${name}' imported from /nowhere`), {
    code: 'ERR_MODULE_NOT_FOUND',
  });
};

const failing = benchResult([
  benchPhase({
    mode: 'unbounded',
    completed: 990,
    failed: 10,
    failedBy: { OMNI_ERR_NATIVE: 1, OMNI_ERR_UNAVAILABLE: 9 },
  }),
  benchPhase({ mode: 'bounded', completed: 995, failed: 5, failedBy: { OMNI_ERR_UNAVAILABLE: 5 } }),
]);

describe('omni-runtime bench with failed requests', () => {
  const output = captureOutputPerTest();

  const bench = (out: string, result: BenchResult, json: boolean) =>
    runBenchCommand([...(json ? ['--json'] : []), '--out', out], {
      runBench: async () => result,
      importPackage: notInstalled,
    });

  it('writes results.json and prints the table, then fails with OMNI_ERR_BENCH', async () => {
    const out = tempDir();
    await expect(bench(out, failing, false)).rejects.toMatchObject({ code: 'OMNI_ERR_BENCH' });
    expect(JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'))).toEqual(failing);
    expect(output.stdout).toContain(`written: ${join(out, 'results.json')}\n`);
  });

  it('--json: the whole summary on stdout first, its failures counted, then OMNI_ERR_BENCH', async () => {
    const out = tempDir();
    await expect(bench(out, failing, true)).rejects.toMatchObject({ code: 'OMNI_ERR_BENCH' });
    const summary = JSON.parse(output.stdout) as BenchSummary;
    expect(summary.phases.map((p) => p.failed)).toEqual([10, 5]);
  });

  it('a run with none failed (refusals and deadline misses are measurements) exits 0', async () => {
    const measured = benchResult([
      benchPhase({ mode: 'unbounded', completed: 600, deadline: 400 }),
      benchPhase({ mode: 'bounded', completed: 700, refused: 300, refusedBy: { requests: 300 } }),
    ]);
    expect(await bench(tempDir(), measured, false)).toBe(0);
  });
});
