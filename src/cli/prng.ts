/**
 * The seeded randomness behind the load generator: the same seed gives the same arrival gaps
 * and the same costs, run after run (Math.random cannot be seeded).
 */

/** mulberry32: a small, fast 32-bit generator; plenty for arrival times and costs. */
export class Prng {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer uniform in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** An exponential gap with the given rate (events per unit): a Poisson process's spacing. */
  exponential(rate: number): number {
    // 1 - next() is in (0, 1]: the log is finite. The draw is taken at any rate, so that a
    // seed's stream does not depend on it; a rate of 0 (one too small for a double per ms) never
    // fires: its gap is Infinity, where a first draw of 0 made it 0 / 0, NaN.
    const log = -Math.log(1 - this.next());
    return rate > 0 ? log / rate : Number.POSITIVE_INFINITY;
  }
}

/** Mixes a run seed with a phase index, so every phase has its own repeatable stream. */
export function phaseSeed(seed: number, phase: number): number {
  let h = (seed ^ Math.imul(phase + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

export interface Arrival {
  /** Milliseconds after the phase's start at which this request is due. */
  readonly at: number;
  /** Its rows: its cost in units. */
  readonly rows: number;
}

/**
 * A seeded Poisson arrival process with uniform costs: request i is due at the sum of i
 * exponential gaps (mean 1000 / ratePerSec ms) and asks for rows uniform in 1..maxRows.
 */
export class ArrivalProcess {
  readonly #prng: Prng;
  readonly #perMs: number;
  readonly #maxRows: number;
  #at = 0;

  constructor(seed: number, ratePerSec: number, maxRows: number) {
    this.#prng = new Prng(seed);
    this.#perMs = ratePerSec / 1000;
    this.#maxRows = maxRows;
  }

  next(): Arrival {
    this.#at += this.#prng.exponential(this.#perMs);
    return { at: this.#at, rows: this.#prng.int(1, this.#maxRows) };
  }
}
