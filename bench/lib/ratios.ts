import { Bench } from 'tinybench';
import { median } from './median.js';

/** One measured operation. `batch` operations run per call (tinybench's ~41 ns timer floor). */
export interface BenchCase {
  readonly name: string;
  readonly batch: number;
  readonly fn: () => unknown;
  readonly async?: boolean;
  /** Name of the case this one is compared against (speed ratio = baseline ns / this ns). */
  readonly baseline?: string;
  /** The ratio the design asks for; printed beside the measured one. */
  readonly target?: number;
}

export interface BenchRow {
  readonly name: string;
  readonly nsPerOp: number;
  readonly baseline: string | undefined;
  readonly ratio: number | undefined;
  readonly target: number | undefined;
  readonly met: boolean | undefined;
}

/**
 * Runs every case `rounds` times, interleaved (A, B, A, B, ...), in this one process, and
 * reports the median of each case's per-round medians. Absolute times on shared machines are
 * noise; the ratios between cases measured side by side are the result.
 */
export async function measure(cases: readonly BenchCase[], rounds = 3, timeMs = 250): Promise<BenchRow[]> {
  const samples = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const c of cases) {
      const bench = new Bench({ time: timeMs, warmupTime: 50 });
      bench.add(c.name, c.fn as () => void, { async: c.async === true });
      await bench.run();
      const result = bench.tasks[0]?.result;
      if (result?.state !== 'completed') throw new Error(`benchmark case ${c.name} failed`);
      samples.get(c.name)!.push((result.latency.p50 * 1e6) / c.batch);
    }
  }
  const ns = new Map([...samples].map(([name, values]) => [name, median(values)]));
  return cases.map((c) => {
    const own = ns.get(c.name)!;
    const base = c.baseline === undefined ? undefined : ns.get(c.baseline);
    const ratio = base === undefined ? undefined : base / own;
    return {
      name: c.name,
      nsPerOp: own,
      baseline: c.baseline,
      ratio,
      target: c.target,
      met: c.target === undefined || ratio === undefined ? undefined : ratio >= c.target,
    };
  });
}

/** Prints a Markdown table (it goes into the README or docs/benchmarks.md as measured). */
export function printRatios(title: string, rows: readonly BenchRow[]): void {
  process.stdout.write(formatRatios(title, rows));
}

/** The Markdown table printRatios prints. */
export function formatRatios(title: string, rows: readonly BenchRow[]): string {
  const lines = [
    `### ${title}`,
    '',
    '| case | ns/op (median) | vs baseline | ratio | target |',
    '| --- | ---: | --- | ---: | --- |',
    ...rows.map((r) => {
      const ratio = r.ratio === undefined ? '' : `${ratioText(r.ratio, r.target)}x`;
      const target = r.target === undefined ? '' : `>= ${r.target}x ${r.met ? 'met' : 'NOT met'}`;
      return `| ${r.name} | ${nsText(r.nsPerOp)} | ${r.baseline ?? '(baseline)'} | ${ratio} | ${target} |`;
    }),
    '',
  ];
  return `${lines.join('\n')}\n`;
}

/** Whole nanoseconds from 100 up, one decimal below; 99.96 rounds to "100", not "100.0". */
function nsText(ns: number): string {
  const one = ns.toFixed(1);
  return Number(one) >= 100 ? ns.toFixed(0) : one;
}

/**
 * Two decimals, or as many more as it takes to show the ratio on the side of its target the
 * verdict says: 0.6996 against 0.7 is "0.6996", not "0.70" beside "NOT met". The verdict is the
 * unrounded ratio's; the printed figure must not contradict it.
 */
function ratioText(ratio: number, target: number | undefined): string {
  let decimals = 2;
  // toFixed(20) is within 1e-20 of any ratio near a target: the loop ends by then.
  while (
    target !== undefined &&
    decimals < 20 &&
    Number(ratio.toFixed(decimals)) >= target !== ratio >= target
  ) {
    decimals++;
  }
  return ratio.toFixed(decimals);
}
