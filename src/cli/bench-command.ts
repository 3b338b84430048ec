/**
 * `omni-runtime bench`: parse flags, run the load, then write results.json and the charts and
 * print the table (or, with --json, the summary) on stdout. Without the optional chart
 * packages the charts are skipped with one line on stderr; the run still succeeds.
 */
import { BENCH_HELP, parseBenchArgs } from './bench-options.js';
import { formatReport, summarize } from './bench-report.js';
import { runBench } from './bench-run.js';
import { CHART_INSTALL_COMMAND, type ImportPackage, loadChartLibraries } from './chart-libraries.js';
import { CHART_FILES, charts, renderSvg } from './charts.js';
import { discardOutDir, prepareOutDir, removeOutputs, writeOutputs } from './output-dir.js';
import { Progress } from './progress.js';

const RESULTS_FILE = 'results.json';

/** What the command runs the load with and loads the chart packages with; tests replace them. */
export interface BenchCommandDeps {
  readonly runBench: typeof runBench;
  readonly importPackage?: ImportPackage;
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
  const out = prepareOutDir(config.outDir, [RESULTS_FILE, ...CHART_FILES]);
  const outDir = out.dir;
  const plannedS = config.calibrateS + config.durationS;
  const progress = new Progress(plannedS);
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
  const files = writeOutputs(outDir, [[RESULTS_FILE, `${JSON.stringify(result, null, 2)}\n`]]);
  let chartError: unknown;
  try {
    // An earlier run's charts beside these results would pass for this run's, if charts are
    // skipped or fail below. One that cannot be removed is reported after the results.
    removeOutputs(outDir, CHART_FILES);
    const libraries = await loadChartLibraries(deps.importPackage);
    if (libraries === undefined) {
      process.stderr.write(
        `charts skipped: the optional dependencies vega and vega-lite are not installed (${CHART_INSTALL_COMMAND})\n`,
      );
    } else {
      const svgs = await Promise.all(
        charts(result).map(async (c) => [c.file, await renderSvg(c.spec, libraries)] as const),
      );
      files.push(...writeOutputs(outDir, svgs));
    }
  } catch (err) {
    chartError = err;
  }
  if (config.json) {
    process.stdout.write(`${JSON.stringify(summarize(result, files), null, 2)}\n`);
  } else {
    process.stdout.write(formatReport(result, files));
  }
  if (chartError !== undefined) throw chartError;
  return 0;
}
