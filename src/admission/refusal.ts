import type { RefusalReason } from '../errors.js';

/**
 * An admission refused at once. Frozen constants: a refusal storm makes no refusal objects
 * (its count still allocates a BigInt each, see BoundedAdmission's Invariants).
 */
export interface Refusal {
  /** Always false: tells a Refusal from a Permit. */
  readonly ok: false;
  /** Why it was refused: 'requests', 'units', 'too-large', 'queued' or 'closed'. */
  readonly reason: RefusalReason;
}

function refusal(reason: RefusalReason): Refusal {
  return Object.freeze({ ok: false, reason });
}

export const REFUSED_REQUESTS = refusal('requests');
export const REFUSED_UNITS = refusal('units');
export const REFUSED_TOO_LARGE = refusal('too-large');
export const REFUSED_QUEUED = refusal('queued');
export const REFUSED_CLOSED = refusal('closed');
