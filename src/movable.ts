/**
 * piscina's transfer idiom, `move(value)`: an object carrying its value and its transfer list
 * under two registered symbols. piscina honours one only at the top level of what is posted; a
 * movable nested inside anything else is cloned as a plain object, its value silently lost. The
 * runtime nests both inputs (in its task message) and results (in its reply), so it unwraps a
 * top-level movable into its value and transfer list first. The check allocates nothing: it runs
 * on every dispatch.
 */
import { Piscina } from 'piscina';

const kTransferable = Piscina.transferableSymbol;
const kValue = Piscina.valueSymbol;

export type Movable = { readonly [kTransferable]: unknown; readonly [kValue]: unknown };

/** Never throws: a proxy whose traps throw is not a movable (posting it reports what is wrong). */
export function isMovable(value: unknown): value is Movable {
  if (typeof value !== 'object' || value === null) return false;
  try {
    return kTransferable in value && kValue in value;
  } catch {
    return false;
  }
}

export function movedValue(movable: Movable): unknown {
  return movable[kValue];
}

/**
 * Up to this many own buffers, the list is searched for each (cheaper than a set, measured by
 * bench/movable-merge.bench.ts: a set costs ~15-40 ns a buffer, a search ~1 ns a buffer passed),
 * and a move() of a buffer or two allocates no set. Above it one: the searches made k own
 * buffers and m listed ones cost O(k * (m + k)), ~1.5 ms a call at 1,024 of each.
 */
const SEARCHED_OWN = 48;

/** `transfer` plus the movable's own buffers, each once (a duplicate could not be posted). */
export function withMovedBuffers(movable: Movable, transfer: readonly ArrayBuffer[]): readonly ArrayBuffer[] {
  // piscina concatenates it: one transferable or a list of them.
  const own = movable[kTransferable];
  const merged = [...transfer];
  if (!Array.isArray(own)) {
    if (own != null && !merged.includes(own as ArrayBuffer)) merged.push(own as ArrayBuffer);
    return merged;
  }
  // Its own list may name a buffer twice too (two views over one buffer, each listing it).
  if (own.length <= SEARCHED_OWN) {
    for (const buffer of own as ArrayBuffer[]) if (!merged.includes(buffer)) merged.push(buffer);
    return merged;
  }
  const listed = new Set(merged);
  for (const buffer of own as ArrayBuffer[]) {
    if (listed.has(buffer)) continue;
    listed.add(buffer);
    merged.push(buffer);
  }
  return merged;
}
