/**
 * withMovedBuffers (a move()'s own buffers merged into the call's transfer list) at k own
 * buffers and m listed ones, none shared (each own buffer is searched for and not found),
 * against the floor of any merge that returns a new list: the two lists copied into one, no
 * duplicate check. One process, interleaved (bench/lib/ratios.ts).
 * Run: npx tsc -p tsconfig.json && node dist/bench/movable-merge.bench.js [k:m,k:m,...]
 */
import { Piscina } from 'piscina';
import { type Movable, withMovedBuffers } from '../src/movable.js';
import { type BenchArg, benchArgs } from './lib/args.js';
import { type BenchCase, measure, printRatios } from './lib/ratios.js';

/**
 * `k:m,...`: k >= 1 own buffers (a move() carries at least one), m >= 0 listed ones, in plain
 * digits. At most 2^20 each: both lists are made up front, and much longer ones would fill
 * the heap before the first row.
 */
const sizesArg: BenchArg<[number, number][]> = {
  name: 'k:m,...',
  takes: 'comma-separated k:m pairs (as 8:8,64:0), k from 1 and m from 0, each at most 1048576',
  fallback: [
    [1, 0],
    [2, 2],
    [1, 1],
    [8, 8],
    [64, 64],
    [1024, 1024],
  ],
  read: (raw) => {
    const pairs = raw.split(',').map((part) => /^(\d+):(\d+)$/.exec(part));
    if (pairs.some((p) => p === null)) return undefined;
    const sizes = pairs.map((p) => [Number(p![1]), Number(p![2])] as [number, number]);
    return sizes.every(([k, m]) => k >= 1 && k <= 1 << 20 && m <= 1 << 20) ? sizes : undefined;
  },
};
const [sizes] = benchArgs('movable-merge.bench', [sizesArg]);

const BATCH = 100;
let sink: readonly ArrayBuffer[] = [];

function buffers(count: number): ArrayBuffer[] {
  return Array.from({ length: count }, () => new ArrayBuffer(8));
}

/** A move() of one buffer carries it alone; of several, a list (piscina concatenates either). */
function movable(own: ArrayBuffer[]): Movable {
  const transferable = own.length === 1 ? own[0] : own;
  return { [Piscina.transferableSymbol]: transferable, [Piscina.valueSymbol]: null } as Movable;
}

function cases(k: number, m: number): BenchCase[] {
  const transfer = buffers(m);
  const own = buffers(k);
  const moved = movable(own);
  const floor = `copy k=${k} m=${m}`;
  return [
    {
      name: floor,
      batch: BATCH,
      fn: () => {
        for (let i = 0; i < BATCH; i++) sink = [...transfer, ...own];
      },
    },
    {
      name: `withMovedBuffers k=${k} m=${m}`,
      batch: BATCH,
      fn: () => {
        for (let i = 0; i < BATCH; i++) sink = withMovedBuffers(moved, transfer);
      },
      baseline: floor,
    },
  ];
}

const rows = [];
for (const [k, m] of sizes) rows.push(...(await measure(cases(k, m), 3, 100)));
printRatios('withMovedBuffers (ratio = copy ns / merge ns; higher is faster)', rows);
if (sink.length < 0) throw new Error('unreachable');
