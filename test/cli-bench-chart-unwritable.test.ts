/**
 * `omni-runtime bench` whose second chart cannot be written (a full disk): the run fails with
 * the write's code, after the summary, and that summary's `files` lists every file this run
 * did write: the first chart too, which is there. Before, it listed results.json alone, the
 * chart written before the failure left on disk unlisted. In-process, with the load replaced by
 * a made-up result, the charts drawn by the real vega, and writes of one chart failing.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { expect, it, vi } from 'vitest';
import type { BenchSummary } from '../src/cli/bench-report.js';
import { benchPhase, benchResult } from './fixtures/bench-result.js';
import { captureOutputPerTest } from './fixtures/capture-output.js';
import { tempDirs } from './fixtures/temp-dirs.js';

/** Writes of this file (its partial file beside it) fail as a full disk does. */
const FAILING = 'throughput.svg';
vi.mock('node:fs', async (importOriginal) => {
  const { fullDisk } = await import('./fixtures/full-disk.js');
  return fullDisk(await importOriginal<typeof import('node:fs')>(), (file) => file.includes(FAILING));
});

const { runBenchCommand } = await import('../src/cli/bench-command.js');
const tempDir = tempDirs('omni-bench-chart-unwritable-');

const output = captureOutputPerTest();

it("lists the chart written before the failing one among the summary's files, as it is on disk", async () => {
  const out = tempDir();
  const result = benchResult([benchPhase({ mode: 'unbounded' }), benchPhase({ mode: 'bounded' })]);
  await expect(
    runBenchCommand(['--json', '--out', out], { runBench: async () => result }),
  ).rejects.toHaveProperty('code', 'ENOSPC');
  const written = ['results.json', 'latency.svg'];
  expect(fs.readdirSync(out).sort()).toEqual([...written].sort());
  expect((JSON.parse(output.stdout) as BenchSummary).files).toEqual(written.map((name) => join(out, name)));
});
