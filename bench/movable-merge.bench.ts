/**
 * withMovedBuffers (a move()'s own buffers merged into the call's transfer list) at k own
 * buffers and m listed ones, none shared (each own buffer is searched for and not found),
 * against the floor of any merge that returns a new list: the two lists copied into one, no
 * duplicate check. One process, interleaved (bench/lib/ratios.ts).
 * Run: npx tsc -p tsconfig.json && node dist/bench/movable-merge.bench.js [k:m,k:m,...]
 */
import { Piscina } from 'piscina';
import { type Movable, withMovedBuffers } from '../src/movable.js';
import { type BenchCase, measure, printRatios } from './lib/ratios.js';

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

const sizes = (process.argv[2] ?? '1:0,2:2,1:1,8:8,64:64,1024:1024')
  .split(',')
  .map((s) => s.split(':').map(Number));
const rows = [];
for (const [k, m] of sizes) rows.push(...(await measure(cases(k!, m!), 3, 100)));
printRatios('withMovedBuffers (ratio = copy ns / merge ns; higher is faster)', rows);
if (sink.length < 0) throw new Error('unreachable');
