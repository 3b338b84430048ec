import { PermitMovedError, PermitReleasedError } from '../errors.js';
import { type Claim, kClaim, kRelease, type PermitOwner } from './internal.js';
import { type Cohort, leave } from './leak-guard.js';

const HELD = 0;
const RELEASED = 1;
const MOVED = 2;

/**
 * An owned reservation of one request and `units` units.
 *
 * Invariants: released exactly once. While it stays on its thread a local flag gives that
 * guarantee with no shared write; `toClaim()` moves it into a shared slot so another thread
 * may release it, after which this object refuses to release (OMNI_ERR_PERMIT_MOVED).
 * Memory ordering: the local flag is this thread's alone; release() gives the counts back
 * with one sequentially consistent subtract (BoundedAdmission, "Memory ordering"), and toClaim()
 * hands the reservation to a shared slot by compare-exchange (ClaimTable).
 * Abort safety: a permit is independent of any caller signal; only release ends it.
 * Throws: OMNI_ERR_PERMIT_RELEASED on a second release, OMNI_ERR_PERMIT_MOVED after toClaim.
 */
export class Permit implements Disposable {
  /** The cost it was admitted with (held against the unit ceiling, if there is one). */
  readonly units: number;
  readonly #owner: PermitOwner;
  /** What release subtracts from the state word (its type follows the admission's word). */
  readonly #delta: number | bigint;
  readonly #cohort: Cohort;
  #state = HELD;

  /**
   * @internal Created by BoundedAdmission only, after its reservation. The package exports the
   * type, not the class, so a permit is not made by mistake; a guard here would cost the hot
   * path a few ns, and the shared buffer is writable anyway (not a security boundary).
   */
  constructor(owner: PermitOwner, units: number, delta: number | bigint, cohort: Cohort) {
    this.#owner = owner;
    this.units = units;
    this.#delta = delta;
    this.#cohort = cohort;
  }

  /** Discriminates a Permit from a Refusal in tryAdmit's result. */
  get ok(): true {
    return true;
  }

  /** True once release() (or disposal) has given the capacity back. */
  get released(): boolean {
    return this.#state === RELEASED;
  }

  /** True once toClaim() has moved it into a claim: release the claim, not the permit. */
  get moved(): boolean {
    return this.#state === MOVED;
  }

  /**
   * Gives the request and its units back, exactly once. Throws OMNI_ERR_PERMIT_RELEASED when
   * already released, OMNI_ERR_PERMIT_MOVED after toClaim().
   */
  release(): void {
    if (this.#state !== HELD) this.#throwNotHeld();
    this.#state = RELEASED;
    leave(this.#cohort, this.units);
    this.#owner[kRelease](this.units, this.#delta);
  }

  /**
   * Moves the reservation into a structured-cloneable claim that any attached thread can
   * release (exactly once across all copies). Throws OMNI_ERR_CLAIMS_EXHAUSTED, leaving the
   * permit held, when every claim slot is taken.
   */
  toClaim(): Claim {
    if (this.#state !== HELD) this.#throwNotHeld();
    const claim = this.#owner[kClaim](this.units);
    this.#state = MOVED;
    leave(this.#cohort, this.units);
    return claim;
  }

  /** `using permit = ...` releases at scope exit; a released or moved permit is left alone. */
  [Symbol.dispose](): void {
    if (this.#state === HELD) this.release();
  }

  #throwNotHeld(): never {
    throw this.#state === MOVED ? new PermitMovedError() : new PermitReleasedError();
  }
}
