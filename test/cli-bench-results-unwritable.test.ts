/**
 * `omni-runtime bench` whose results.json cannot be written (a full disk): the run fails with
 * the write's code (exit 1) and, having written nothing, leaves no --out folder of its own
 * behind, as a run that fails before writing does. Its figures still reach stdout first (the
 * table, or the --json summary with no files), so the measurement is not lost with the file;
 * no chart is drawn beside an earlier run's results.json, which stays whole. Before, the empty
 * folder stayed, and later nothing was printed either. In-process, with the load replaced by a
 * made-up result and every write under the folder failing as ENOSPC.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { expect, it, vi } from 'vitest';
import { type BenchSummary, formatReport, summarize } from '../src/cli/bench-report.js';
import { exitCodeFor } from '../src/cli/main.js';
import { benchPhase, benchResult } from './fixtures/bench-result.js';
import { captureOutputPerTest } from './fixtures/capture-output.js';
import { tempDirs } from './fixtures/temp-dirs.js';

/** Writes under this folder fail as a full disk does. */
let failIn: string | undefined;
vi.mock('node:fs', async (importOriginal) => {
  const { fullDisk } = await import('./fixtures/full-disk.js');
  return fullDisk(
    await importOriginal<typeof import('node:fs')>(),
    (file) => failIn !== undefined && file.startsWith(failIn),
  );
});

const { runBenchCommand } = await import('../src/cli/bench-command.js');
const tempDir = tempDirs('omni-bench-unwritable-');
const result = benchResult([benchPhase({ mode: 'unbounded' }), benchPhase({ mode: 'bounded' })]);

const output = captureOutputPerTest();

/** The command's rejection, with every write under `dir` failing meanwhile. */
async function failure(dir: string, argv: string[], measured = result): Promise<unknown> {
  failIn = dir;
  try {
    return await runBenchCommand(argv, { runBench: async () => measured }).then(
      () => undefined,
      (err: unknown) => err,
    );
  } finally {
    failIn = undefined;
  }
}

it('prints the table, fails with the write error (exit 1), and removes the empty folder it made', async () => {
  const parent = tempDir();
  const made = join(parent, 'made');
  const err = await failure(made, ['--out', join(made, 'deeper')]);
  expect(err).toHaveProperty('code', 'ENOSPC');
  expect(exitCodeFor(err)).toBe(1);
  expect(fs.readdirSync(parent)).toEqual([]);
  expect(output.stdout).toBe(formatReport(result, []));
  expect(output.stdout.trimEnd().split('\n').at(-1)).toBe('written: nothing');
});

it("--json: prints the summary with no files; an earlier run's results and charts stay as they were", async () => {
  const out = tempDir();
  const earlier = `${JSON.stringify({ tool: 'omni-runtime bench', seed: 7 })}\n`;
  fs.writeFileSync(join(out, 'results.json'), earlier);
  fs.writeFileSync(join(out, 'latency.svg'), '<svg class="marks">earlier</svg>');
  const err = await failure(out, ['--json', '--out', out]);
  expect(err).toHaveProperty('code', 'ENOSPC');
  expect(exitCodeFor(err)).toBe(1);
  expect(JSON.parse(output.stdout) as BenchSummary).toEqual(summarize(result, []));
  expect(fs.readdirSync(out).sort()).toEqual(['latency.svg', 'results.json']);
  expect(fs.readFileSync(join(out, 'results.json'), 'utf8')).toBe(earlier);
  expect(fs.readFileSync(join(out, 'latency.svg'), 'utf8')).toBe('<svg class="marks">earlier</svg>');
});

it('a run whose requests also failed: the write error is what it fails with, the file being what is missing', async () => {
  const failedResult = benchResult([
    benchPhase({ completed: 990, failed: 10, failedBy: { OMNI_ERR_NATIVE: 10 } }),
    benchPhase({ mode: 'bounded' }),
  ]);
  const out = tempDir();
  const err = await failure(out, ['--out', out], failedResult);
  // OMNI_ERR_BENCH would say the run failed, not that its results.json is not there.
  expect(err).toHaveProperty('code', 'ENOSPC');
  expect(output.stdout).toBe(formatReport(failedResult, []));
});
