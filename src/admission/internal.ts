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
  readonly slot: number;
  readonly generation: number;
  readonly units: number;
}
