/** BoundedAdmission.report(): the shared counters, as one thread reads them now. */
export interface AdmissionReport {
  /** Outstanding requests. */
  depth: number;
  /** The request bound. */
  capacity: number;
  /** Refusals only, never accepted work (counted in 64 bits; exact here up to 2^53). */
  rejected: number;
  /** Outstanding units (0 in request-only mode). */
  units: number;
  /** The unit ceiling, or null in request-only mode. */
  unitCapacity: number | null;
  /** Waiters queued in `admit` across every attached instance. */
  waiting: number;
  /** Permits reclaimed by the leak safety net (dropped without release; 64 bits, as `rejected`). */
  leaked: number;
}
