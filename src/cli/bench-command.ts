/**
 * `omni-runtime bench`: parse flags, run the load, then write results.json and the charts and
 * print the table (or, with --json, the summary) on stdout. Without the optional chart
 * packages the charts are skipped with one line on stderr; the run still succeeds. A run whose
 * requests failed is written and printed, then fails (OMNI_ERR_BENCH). One stopped by SIGINT,
 * SIGTERM or SIGHUP writes nothing partial (see bench-interrupt.ts).
 */
import { BenchError } from './bench-error.js';
import { onInterrupt, type Raise, raiseSignal } from './bench-interrupt.js';
import { BENCH_HELP, type BenchConfig, parseBenchArgs } from './bench-options.js';
import { formatReport, summarize } from './bench-report.js';
import { runBench } from './bench-run.js';
import { CHART_INSTALL_COMMAND, type ImportPackage, loadChartLibraries } from './chart-libraries.js';
import { CHART_FILES, charts, renderSvg } from './charts.js';
import { checkEarlierRun } from './earlier-run.js';
import { discardOutDir, type OutDir, prepareOutDir, removeOutputs, writeOutputs } from './output-dir.js';
import { Progress } from './progress.js';
import type { SignalSource } from './shutdown-signals.js';

const RESULTS_FILE = 'results.json';
/** Every file the command writes: nothing else under --out is touched. */
const OUTPUT_FILES = [RESULTS_FILE, ...CHART_FILES];

/** What the command runs the load with and loads the chart packages with; tests replace them. */
export interface BenchCommandDeps {
  readonly runBench: typeof runBench;
  readonly importPackage?: ImportPackage;
  /** Where SIGINT, SIGTERM and SIGHUP come from (`process`), and how one then ends the process. */
  readonly signals?: SignalSource;
  readonly raise?: Raise;
}

/** Runs the command; resolves with the exit code. Usage mistakes throw UsageError. */
export async function runBenchCommand(
  argv: readonly string[],
  deps: BenchCommandDeps = { runBench },
): Promise<number> {
  const config = parseBenchArgs(argv);
  if (config === 'help') {
    process.stdout.write(BENCH_HELP);
    return 0;
  }
  // Listening before the folder is made: a signal between the two would leave it behind.
  let out: OutDir | undefined;
  let progress: Progress | undefined;
  const files: string[] = [];
  const stopListening = onInterrupt(deps.signals ?? process, (signal) => {
    stopListening();
    progress?.stop();
    if (out !== undefined) discardOutDir(out);
    const left = files.length === 0 ? 'nothing written' : `written: ${files.join(', ')} (the charts not)`;
    process.stderr.write(`omni-runtime: bench: interrupted by ${signal}; ${left}\n`);
    (deps.raise ?? raiseSignal)(signal);
  });
  try {
    out = prepareOutDir(config.outDir, OUTPUT_FILES);
    checkEarlierRun(out.dir, config.outDir, RESULTS_FILE, OUTPUT_FILES);
    progress = new Progress(config.calibrateS + config.durationS);
    return await measure(config, out, progress, files, deps);
  } finally {
    stopListening();
  }
}

/** The run and its outputs, once the folder is ready; `files` collects the paths written. */
async function measure(
  config: BenchConfig,
  out: OutDir,
  progress: Progress,
  files: string[],
  deps: BenchCommandDeps,
): Promise<number> {
  const outDir = out.dir;
  let result: Awaited<ReturnType<typeof runBench>>;
  try {
    result = await deps.runBench(config, progress);
  } catch (err) {
    // Rejected after its flags were read (a multiple of capacity known only from calibration),
    // or failed: nothing was written, so no folder made for it stays behind.
    discardOutDir(out);
    throw err;
  } finally {
    progress.stop();
  }
  // The measurement is written first: a chart library that fails to load or render must not
  // cost the run its results.
  let failure: unknown;
  try {
    files.push(...writeOutputs(outDir, [[RESULTS_FILE, `${JSON.stringify(result, null, 2)}\n`]]));
  } catch (err) {
    // Not written (a full disk): the file is whole or not there, and a folder made for it and
    // still empty goes, as after a failed run. The figures are still printed below, so the run
    // is not lost with its file; no chart is drawn beside an earlier run's results.json.
    discardOutDir(out);
    failure = err;
  }
  if (failure === undefined) failure = await writeCharts(outDir, result, files, deps.importPackage);
  if (config.json) {
    process.stdout.write(`${JSON.stringify(summarize(result, files), null, 2)}\n`);
  } else {
    process.stdout.write(formatReport(result, files));
  }
  if (failure !== undefined) throw failure;
  const failed = failedRequests(result);
  if (failed !== undefined) throw failed;
  return 0;
}

/**
 * Replaces the charts beside this run's results.json; `files` collects those written. Resolves
 * with the error that stopped them (reported after the results are printed), if any.
 */
async function writeCharts(
  outDir: string,
  result: Awaited<ReturnType<typeof runBench>>,
  files: string[],
  importPackage: ImportPackage | undefined,
): Promise<unknown> {
  try {
    // An earlier run's charts beside these results would pass for this run's, if charts are
    // skipped or fail below. One that cannot be removed is reported after the results.
    removeOutputs(outDir, CHART_FILES);
    const libraries = await loadChartLibraries(importPackage);
    if (libraries === undefined) {
      process.stderr.write(
        `charts skipped: the optional dependencies vega and vega-lite are not installed (${CHART_INSTALL_COMMAND})\n`,
      );
      return undefined;
    }
    const svgs = await Promise.all(
      charts(result).map(async (c) => [c.file, await renderSvg(c.spec, libraries)] as const),
    );
    // One at a time: a write that fails (a full disk) leaves those before it, and the
    // summary's files must name them.
    for (const svg of svgs) files.push(...writeOutputs(outDir, [svg]));
    return undefined;
  } catch (err) {
    return err;
  }
}

/**
 * A run whose requests failed (a native error, a runtime that failed and refuses every call
 * after it) measured a broken runtime, not a scheduler: its failures are the fastest calls in
 * the table. Its figures are still written and printed, but it is no success (exit 1), so a
 * script or CI job that runs the benchmark is told.
 */
function failedRequests(result: Awaited<ReturnType<typeof runBench>>): BenchError | undefined {
  const byCode = new Map<string, number>();
  for (const phase of result.phases) {
    for (const [code, count] of Object.entries(phase.failedBy))
      byCode.set(code, (byCode.get(code) ?? 0) + count);
  }
  const total = result.phases.reduce((sum, phase) => sum + phase.failed, 0);
  if (total === 0) return undefined;
  const codes = [...byCode].map(([code, count]) => `${count} ${code}`).join(', ');
  return new BenchError(
    `${total} ${total === 1 ? 'request' : 'requests'} failed (${codes}): the figures measure a failing runtime`,
  );
}
