/**
 * `omni-runtime bench`: parse flags, run the load, then write results.json and the charts and
 * print the table (or, with --json, the summary) on stdout.
 */
import { BENCH_HELP, parseBenchArgs } from './bench-options.js';
import { formatReport, summarize } from './bench-report.js';
import { runBench } from './bench-run.js';
import { CHART_FILES, charts, renderSvg } from './charts.js';
import { prepareOutDir, writeOutputs } from './output-dir.js';
import { Progress } from './progress.js';

const RESULTS_FILE = 'results.json';

/** Runs the command; resolves with the exit code. Usage mistakes throw UsageError. */
export async function runBenchCommand(argv: readonly string[]): Promise<number> {
  const config = parseBenchArgs(argv);
  if (config === 'help') {
    process.stdout.write(BENCH_HELP);
    return 0;
  }
  const outDir = prepareOutDir(config.outDir, [RESULTS_FILE, ...CHART_FILES]);
  const plannedS = config.calibrateS + config.durationS;
  const progress = new Progress(plannedS);
  let result: Awaited<ReturnType<typeof runBench>>;
  try {
    result = await runBench(config, progress);
  } finally {
    progress.stop();
  }
  const svgs = await Promise.all(charts(result).map(async (c) => [c.file, await renderSvg(c.spec)] as const));
  const files = writeOutputs(outDir, [[RESULTS_FILE, `${JSON.stringify(result, null, 2)}\n`], ...svgs]);
  if (config.json) {
    process.stdout.write(`${JSON.stringify(summarize(result, files), null, 2)}\n`);
  } else {
    process.stdout.write(formatReport(result, files));
  }
  return 0;
}
