/**
 * Last-resort safety net for permits dropped without release.
 *
 * Registering every permit with a FinalizationRegistry costs far more than the whole admit/
 * release pair (measured ~0.5 us against ~35 ns here), so permits are grouped into cohorts of
 * up to COHORT_SIZE consecutive permits. Each permit references its cohort; the cohort is
 * registered once, with a record of what its permits still hold as the held value. When every
 * permit of a cohort is unreachable the cohort is collected and whatever its record still
 * counts was leaked: it is given back and counted in report().leaked.
 *
 * The current cohort is also closed every ROTATE_MS if it was used, so leaks are found even
 * when no further permits are issued (an admission filled entirely by leaked permits). A leak
 * is reclaimed only once its cohort-mates are gone too, and only when the GC runs: this is a
 * safety net, not a release mechanism.
 */

export const COHORT_SIZE = 1024;
export const ROTATE_MS = 1000;

/** Gives a leaked cohort's count and units back to the shared counts. */
export type LeakSink = (count: number, units: number) => void;

/**
 * What a cohort's permits still hold, and where it goes back. Must not reference the cohort (it
 * is the held value).
 */
export interface CohortRecord {
  /** Permits issued into the cohort; those still held are `issued - left`. */
  issued: number;
  /** Permits that left it: released, or moved into a claim. */
  left: number;
  /** Units its permits still hold. */
  units: number;
  readonly giveBack: LeakSink;
}

export class Cohort {
  readonly record: CohortRecord;
  constructor(giveBack: LeakSink) {
    this.record = { issued: 0, left: 0, units: 0, giveBack };
  }
}

/**
 * One registry for every admission instance of this thread, never collected: a registry that is
 * collected runs none of its callbacks. One per instance went with its instance, so a permit
 * dropped together with the instance that admitted it (an instance attached for one task, say)
 * was never given back, and every other instance sharing the bound lost that capacity for good.
 */
const registry = new FinalizationRegistry(cohortCollected);

/** The registry's callback: whatever a collected cohort's permits still counted was leaked. */
export function cohortCollected(record: CohortRecord): void {
  const held = record.issued - record.left;
  if (held > 0) record.giveBack(held, record.units);
}

export class LeakGuard {
  readonly #giveBack: LeakSink;
  #cohort: Cohort;

  /**
   * `giveBack` outlives the guard (the registry calls it once a dropped admission's permits are
   * collected too) and must not hold the admission: the registry holds it strongly while the
   * current cohort lives, and the admission holds that cohort, so neither would ever go.
   */
  constructor(giveBack: LeakSink) {
    this.#giveBack = giveBack;
    this.#cohort = this.#open();
    LeakGuard.#rotate(new WeakRef(this));
  }

  /**
   * Weak: the timer must not keep a dropped admission (and its guard) alive. A function of its
   * own, not a closure in the constructor: closures made in one scope share one context, so the
   * timer's callback would hold whatever another closure made there holds.
   */
  static #rotate(self: WeakRef<LeakGuard>): void {
    const timer: ReturnType<typeof setInterval> = setInterval(() => {
      const guard = self.deref();
      if (guard === undefined) clearInterval(timer);
      else if (guard.#cohort.record.issued !== 0) guard.#cohort = guard.#open();
    }, ROTATE_MS);
    timer.unref();
  }

  /** Counts a new permit into the current cohort and returns it. */
  enter(units: number): Cohort {
    const cohort = this.#cohort;
    const record = cohort.record;
    record.units += units;
    // One count serves both the rotation and the accounting: held = issued - left.
    if (++record.issued === COHORT_SIZE) this.#cohort = this.#open();
    return cohort;
  }

  #open(): Cohort {
    const cohort = new Cohort(this.#giveBack);
    registry.register(cohort, cohort.record);
    return cohort;
  }
}

/** A permit leaves its cohort's accounting: released, or moved into a claim. */
export function leave(cohort: Cohort, units: number): void {
  const record = cohort.record;
  record.left += 1;
  record.units -= units;
}
