/**
 * The plain piscina baseline for bench/runtime.bench.ts: the same trivial work as
 * test/fixtures/runtime-bench-worker.ts, with no runtime around it.
 * - default: returns its input (tiny tasks; a copied payload comes back copied).
 * - moveBack: receives a moved ArrayBuffer and moves it back (`return move(x)`).
 */
import { move } from 'piscina';

export default function echo(input: unknown): unknown {
  return input;
}

export function moveBack(buffer: ArrayBuffer): unknown {
  return move(buffer);
}
