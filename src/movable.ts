/**
 * piscina's transfer idiom, `move(value)`: an object carrying its value and its transfer list
 * under two registered symbols. piscina honours one only at the top level of what is posted; a
 * movable nested inside anything else is cloned as a plain object, its value silently lost. The
 * runtime nests both inputs (in its task envelope) and results (in its reply), so it unwraps a
 * top-level movable into its value and transfer list first.
 */
import { Piscina } from 'piscina';

export interface Unwrapped {
  readonly value: unknown;
  /** The movable's own transfer list (empty for a plain value). */
  readonly transfer: readonly ArrayBuffer[];
}

const kTransferable = Piscina.transferableSymbol;
const kValue = Piscina.valueSymbol;

export function unwrapMovable(value: unknown): Unwrapped {
  if (typeof value !== 'object' || value === null || !(kTransferable in value) || !(kValue in value)) {
    return { value, transfer: [] };
  }
  const movable = value as Record<symbol, unknown>;
  const list = movable[kTransferable];
  // piscina concatenates it: one transferable or a list of them.
  const transfer = Array.isArray(list) ? (list as ArrayBuffer[]) : list == null ? [] : [list as ArrayBuffer];
  return { value: movable[kValue], transfer };
}
