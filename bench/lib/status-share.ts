import { shareText } from '../../src/cli/bench-report.js';

/** autocannon's count of each status code it heard. */
export type StatusCounts = Readonly<Record<string, { readonly count: number } | undefined>>;

/**
 * The share of the answers autocannon heard that had `status`, in percent, for the table. From
 * the counts, through the CLI table's own rounding (halves up): toFixed(1) on the ratio times 100
 * showed 3 of 2000 (0.15 %, a double just below it) as 0.1 % where the CLI says 0.2 %.
 */
export function statusShare(counts: StatusCounts, status: string): string {
  const answered = Object.values(counts).reduce((sum, s) => sum + (s?.count ?? 0), 0);
  return `${shareText(counts[status]?.count ?? 0, answered)}%`;
}
