/**
 * withMovedBuffers: the call's transfer list, then each of a move()'s own buffers not already
 * in it, in order, each once, whether the move() carries one transferable, a list, or nothing.
 * Both ways it merges are held to that: searching the list (a few own buffers) and a set (many).
 */
import { Piscina } from 'piscina';
import { describe, expect, it } from 'vitest';
import { type Movable, withMovedBuffers } from '../src/movable.js';
import { searched } from './fixtures/array-searches.js';

function movable(own: unknown): Movable {
  return { [Piscina.transferableSymbol]: own, [Piscina.valueSymbol]: 'value' } as Movable;
}

function buffers(count: number): ArrayBuffer[] {
  return Array.from({ length: count }, () => new ArrayBuffer(1));
}

/** The same array, element by element (toEqual alone would take any equal-looking buffers). */
function expectSame(got: readonly ArrayBuffer[], want: readonly ArrayBuffer[]): void {
  expect(got.length).toBe(want.length);
  expect(got.every((buffer, i) => buffer === want[i])).toBe(true);
}

describe('withMovedBuffers', () => {
  it('adds one own transferable unless it is listed; nothing for null or undefined', () => {
    const [a, b] = buffers(2) as [ArrayBuffer, ArrayBuffer];
    expectSame(withMovedBuffers(movable(b), [a]), [a, b]);
    expectSame(withMovedBuffers(movable(a), [a]), [a]);
    expectSame(withMovedBuffers(movable(null), [a]), [a]);
    expectSame(withMovedBuffers(movable(undefined), []), []);
  });

  it('returns a new list, the given one left as it was', () => {
    const listed = buffers(2);
    const given = [...listed];
    const merged = withMovedBuffers(movable(buffers(1)), given);
    expect(merged).not.toBe(given);
    expectSame(given, listed);
  });

  // 6 own buffers are searched for in the list, 400 go through a set: the same result either way.
  for (const size of [3, 200]) {
    it(`keeps the list's order, then its own in theirs, each once (${2 * size} own)`, () => {
      const listed = buffers(size);
      const fresh = buffers(size);
      // Own: fresh ones, some listed already, and some twice (two views over one buffer).
      const own = fresh.flatMap((buffer, i) => (i % 2 === 0 ? [buffer, listed[i]!] : [buffer, buffer]));
      expectSame(withMovedBuffers(movable(own), listed), [...listed, ...fresh]);
    });
  }

  // Before: each own buffer was looked for in the list so far, O(k * (m + k)): 1,024 own and
  // 1,024 listed searched ~1.6 million elements, ~1.5 ms a call.
  it('merges k own buffers into m listed without searching the list for each', () => {
    const listed = buffers(1_024);
    const own = buffers(1_024);
    let merged: readonly ArrayBuffer[] = [];
    const elements = searched(() => {
      merged = withMovedBuffers(movable(own), listed);
    });
    expectSame(merged, [...listed, ...own]);
    expect(elements).toBeLessThanOrEqual(listed.length + own.length);
  });
});
