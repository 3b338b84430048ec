/**
 * Symbols shared by the admission's modules; not exported from the package, so a Permit's
 * back door into its admission is not part of the public API.
 */
export const kRelease = Symbol('omni.admission.release');
export const kClaim = Symbol('omni.admission.claim');
export const kRecount = Symbol('omni.admission.recount');

/** What a Permit needs from its admission: give units back, or move them into a claim. */
export interface PermitOwner {
  [kRelease](units: number, delta: number | bigint): void;
  [kClaim](units: number): Claim;
}

/**
 * A permit turned into plain data so it can cross threads (structured clone). The slot's
 * generation makes copies and stale claims harmless: exactly one release of a claim wins.
 * `units` is informational; the release uses the cost recorded in the shared slot.
 */
export interface Claim {
  /** The id of the admission the claim belongs to. */
  readonly admission: number;
  /** Which shared claim slot holds the reservation (0 .. slots - 1). */
  readonly slot: number;
  /** The slot's use count when the claim was made: a copy kept past its release is stale. */
  readonly generation: number;
  /** The permit's cost, for the holder's information; releasing ignores it. */
  readonly units: number;
}
