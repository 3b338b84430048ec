/**
 * The report a draining server presents: the runtime's, its 'ready' read as 'draining'. A view,
 * not a change to the object report() returned, which is the caller's for a Served of their own:
 * it may be frozen, its `state` a getter alone (writing threw, and /health and /metrics answered
 * 500 for the whole drain), or an object they keep (it stayed 'draining' after the server).
 */
import type { RuntimeReport } from '../runtime.js';

/** Every field of a report, so the view forwards each (the compiler checks none is missing). */
const FIELDS = Object.keys({
  state: true,
  depth: true,
  capacity: true,
  rejected: true,
  units: true,
  unitCapacity: true,
  waiting: true,
  leaked: true,
  queued: true,
  running: true,
  waitTimeMs: true,
  runTimeMs: true,
  completed: true,
  failed: true,
  aborted: true,
  deadline: true,
  refused: true,
  invalid: true,
  unavailable: true,
} satisfies Record<keyof RuntimeReport, true>) as (keyof RuntimeReport)[];

/**
 * `report` as a draining server shows it. Each other field is read from `report` when read (a
 * copy would run the latency getters, ~1 ms each, for a caller reading only `state`), with
 * `report` as `this`, so a getter of the caller's class that reads private fields still works.
 */
export function drainingReport(report: RuntimeReport): RuntimeReport {
  const view = {} as RuntimeReport;
  for (const field of FIELDS) {
    Object.defineProperty(view, field, {
      enumerable: true,
      get: field === 'state' ? () => 'draining' : () => report[field],
    });
  }
  return view;
}
