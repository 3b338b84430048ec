/**
 * The benchmark's results for people (a table on stdout) and for machines (the JSON summary
 * printed by --json, and the full results.json with every phase's timeline).
 */
import type { BenchResult } from './bench-run.js';
import type { PhaseResult } from './phase-recorder.js';

export interface PhaseSummary extends Omit<PhaseResult, 'timeline'> {
  refusedPct: number;
  deadlinePct: number;
}

export interface BenchSummary extends Omit<BenchResult, 'phases'> {
  phases: PhaseSummary[];
  files: string[];
}

/**
 * Hundredths of a percent, halves up: 10000 * part / whole is exact at a half; the ratio first
 * and then 10000 times it was not (57 of 800, 7.125 %, gave 7.12).
 */
const pct = (part: number, whole: number): number =>
  whole === 0 ? 0 : Math.round((10_000 * part) / whole) / 100;

/** Everything but the timelines (those are in results.json). */
export function summarize(result: BenchResult, files: string[]): BenchSummary {
  return {
    ...result,
    phases: result.phases.map(({ timeline: _timeline, ...phase }) => ({
      ...phase,
      refusedPct: pct(phase.refused, phase.sent),
      deadlinePct: pct(phase.deadline, phase.sent),
    })),
    files,
  };
}

/**
 * Number#toFixed rounds the double, and the double nearest a half often lies below it: 2.565
 * (a latency of 2565 us, as results.json has it) showed as 2.56 while 2.575 showed as 2.58.
 * Intl rounds the number as written (its shortest decimal), halves up, and never switches to
 * exponent notation (toFixed does from 1e21).
 */
const FIXED = [0, 1, 2, 3].map(
  (digits) =>
    new Intl.NumberFormat('en-US', {
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
      roundingMode: 'halfExpand',
      useGrouping: false,
    }),
);

function fixed(x: number, digits: 0 | 1 | 2 | 3): string {
  return FIXED[digits]!.format(x);
}

/** Three significant figures, rounded as FIXED rounds (as written, halves up), never exponents. */
const SIGNIFICANT = new Intl.NumberFormat('en-US', {
  minimumSignificantDigits: 3,
  maximumSignificantDigits: 3,
  roundingMode: 'halfExpand',
  useGrouping: false,
});

/**
 * A percentage of `whole` to one decimal, for the table (and bench/serve.bench.ts's, so that the
 * two never round the same counts apart).
 */
export function shareText(part: number, whole: number): string {
  // Whole tenths first, halves up: 100 * 3 / 2000 is the double just below 0.15, which was
  // shown as 0.1 while 1 of 2000 (0.05) went up. 1000 * part / whole is exact at a half, so
  // Math.round sees it as one.
  return fixed(whole === 0 ? 0 : Math.round((1000 * part) / whole) / 10, 1);
}

/**
 * Three significant figures from 1 up, three decimals below; whole numbers from 100 up. Never
 * exponent notation. Latency: below 1 ms that is whole microseconds (the histogram's
 * resolution), so 0.0734 ms shows as 0.073, not 0.07. A rate: a whole number misstated a slow
 * layer's (0.4/s showed as 0), and so did three decimals one under 0.0005/s (0.000): a value
 * above 0 that they would show as 0 takes three significant figures (0.0004 is 0.000400).
 */
export function figures(x: number): string {
  const shown = fixed(x, places(x));
  if (x > 0 && Number(shown) === 0) return SIGNIFICANT.format(x);
  // Rounding can carry into the next decade (99.96 -> "100.0", four figures): the places
  // follow the value shown, not the value before rounding.
  const carried = places(Number(shown));
  return carried < places(x) ? fixed(x, carried) : shown;
}

/** Decimal places for three significant figures (whole numbers from 100, three below 1). */
function places(x: number): 0 | 1 | 2 | 3 {
  if (x >= 100) return 0;
  if (x >= 10) return 1;
  return x >= 1 ? 2 : 3;
}

/** A latency in ms, or '-' for a phase that completed nothing (null in results.json). */
function ms(x: number | null): string {
  return x === null ? '-' : figures(x);
}

function table(rows: string[][], rightAligned: (col: number) => boolean): string {
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((r) => r[col]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, col) => (rightAligned(col) ? cell.padStart(widths[col]!) : cell.padEnd(widths[col]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** The header lines that say what was measured and how. */
export function describe(r: BenchResult): string {
  const c = r.calibration;
  return [
    `omni-runtime bench: backend ${r.backend} (${r.backendReason}), ${r.threads} worker thread(s) per runtime, ${r.cpus} CPU(s), Node ${r.node}`,
    `work: ${r.layer.op}, ${r.layer.inFeatures} -> ${r.layer.outFeatures}; cost = rows per request, uniform in 1..${r.cost.max} (seeded, seed ${r.seed})`,
    `arrivals: ${r.arrivals}; every request has a ${r.deadlineMs} ms deadline`,
    `capacity: ${figures(c.capacity)} req/s (closed loop, ${c.concurrency} outstanding, ${c.seconds} s)`,
    `modes: unbounded = default serial scheduler (no admission, unbounded queue); bounded = admission { requests: ${r.bounds.requests}, units: ${r.bounds.units} }`,
    `each phase offers load for ${figures(r.phaseS)} s, then drains; latency percentiles are of completed requests (HdrHistogram)`,
  ].join('\n');
}

export function formatTable(r: BenchResult): string {
  const head = [
    'mode',
    'offered/s',
    'load',
    'achieved/s',
    'p50 ms',
    'p99 ms',
    'p99.9 ms',
    'refused %',
    'deadline %',
    'failed',
    'depth mean',
    'depth max',
  ];
  const rows = r.phases.map((p) => [
    p.mode,
    figures(p.offeredRate),
    p.rateLabel,
    figures(p.achievedRate),
    ms(p.latencyMs.p50),
    ms(p.latencyMs.p99),
    ms(p.latencyMs.p999),
    // From the counts, not from pct(): rounding to two decimals and then to one misrounds.
    shareText(p.refused, p.sent),
    shareText(p.deadline, p.sent),
    String(p.failed),
    fixed(p.depth.mean, 1),
    String(p.depth.max),
  ]);
  return table([head, ...rows], (col) => col !== 0 && col !== 2);
}

/** The human-readable report: header, table, and where the files went (none: results.json failed). */
export function formatReport(r: BenchResult, files: string[]): string {
  const written = files.length === 0 ? 'nothing' : files.join(', ');
  return `${describe(r)}\n\n${formatTable(r)}\n\nwritten: ${written}\n`;
}
