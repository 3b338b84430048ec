/**
 * The figures a ServeMetrics source answers, checked as a scrape reads them. They are the
 * caller's values: unchecked, one that is no number failed the scrape with prom-client's uncoded
 * TypeError, a report that is no object with a property read of null, and a missing count was
 * worse: prom-client's inc() without a value counts 1, so the series read 1, silently.
 */
import { describeValue, InvalidArgumentError } from '../errors.js';
import type { LatencySummary, RuntimeReport } from '../runtime.js';

/** A series' figure: any number, NaN included (Prometheus's own "no value"). */
export function figure(series: string, value: unknown): number {
  if (typeof value === 'number') return value;
  throw new InvalidArgumentError(`ServeMetrics' source gave ${series} ${describeValue(value)}, not a number`);
}

/**
 * A counter's figure: a number that is not negative nor infinite (NaN stays NaN). prom-client
 * threw its own uncoded errors for those ("It is not possible to decrease a counter").
 */
export function count(series: string, value: unknown): number {
  const n = figure(series, value);
  if (n >= 0 ? n !== Number.POSITIVE_INFINITY : Number.isNaN(n)) return n;
  throw new InvalidArgumentError(`ServeMetrics' source gave ${series} ${describeValue(value)}, not a count`);
}

/** What report() returned, as long as it is an object (its fields are checked as read). */
export function reportOf(value: unknown): RuntimeReport {
  if (typeof value === 'object' && value !== null) return value as RuntimeReport;
  throw new InvalidArgumentError(
    `ServeMetrics' source report() returned ${describeValue(value)}, not a report`,
  );
}

/** A latency summary of the report's, as long as it is an object. */
export function summaryOf(series: string, value: unknown): LatencySummary {
  if (typeof value === 'object' && value !== null) return value as LatencySummary;
  throw new InvalidArgumentError(
    `ServeMetrics' source gave ${series} ${describeValue(value)}, not a { p50, p99, max } summary`,
  );
}

/** The report's state: a string (one that names no state sets every state series to 0). */
export function stateOf(value: unknown): string {
  if (typeof value === 'string') return value;
  throw new InvalidArgumentError(
    `ServeMetrics' source gave its report's state ${describeValue(value)}, not a string`,
  );
}
