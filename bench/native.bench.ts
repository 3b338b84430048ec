/**
 * Native layer: koffi call overhead, and fixture linear + GELU throughput beside the naive C triple
 * loop and a plain TypeScript loop, all measured in this one process, interleaved, medians of
 * per-round medians. Absolute numbers on shared 2-vCPU machines are noise; read the ratios.
 * Run: npm run build && node dist/bench/native.bench.js
 */
import { Bench } from 'tinybench';
import {
  FixtureFaults,
  kRawHandle,
  loadNativeLibrary,
  NativeContext,
  referenceLinearGelu,
  seededFloats,
} from '../src/native/index.js';
import { type BenchCase, type BenchRow, measure, printRatios } from './lib/ratios.js';

const lib = loadNativeLibrary('fixture');
const faults = new FixtureFaults(lib);
const raw = lib.raw;

// ---------------------------------------------------------------------------------------------
// 1. Per-call overhead (sub-microsecond: batched, BATCH calls per timed sample)
// ---------------------------------------------------------------------------------------------
const BATCH = 1000;
const tiny = NativeContext.open(lib);
tiny.uploadWeights(seededFloats(1, 16 * 16), seededFloats(2, 16), 16, 16);
const tinyX = seededFloats(3, 16);
const tinyY = new Float32Array(16);
const tinyHandle = tiny[kRawHandle];
let sink = 0;

function jsCall(v: number): number {
  return v + 1;
}

const overhead: BenchCase[] = [
  {
    name: 'plain JS function call',
    batch: BATCH,
    fn: () => {
      for (let i = 0; i < BATCH; i++) sink = jsCall(sink) & 0xff;
    },
  },
  {
    name: 'koffi: omni_abi_version()',
    batch: BATCH,
    baseline: 'plain JS function call',
    fn: () => {
      for (let i = 0; i < BATCH; i++) sink += raw.omni_abi_version();
    },
  },
  {
    name: 'koffi: raw omni_linear_gelu, 1 row 16->16',
    batch: BATCH,
    baseline: 'koffi: omni_abi_version()',
    fn: () => {
      for (let i = 0; i < BATCH; i++) raw.omni_linear_gelu(tinyHandle, tinyX, 16, 1, tinyY, 16);
    },
  },
  {
    name: 'NativeContext.linearGelu, 1 row 16->16',
    batch: BATCH,
    baseline: 'koffi: raw omni_linear_gelu, 1 row 16->16',
    fn: () => {
      for (let i = 0; i < BATCH; i++) tiny.linearGelu(tinyX, 1, tinyY);
    },
  },
];

// ---------------------------------------------------------------------------------------------
// 2. Linear + GELU throughput (milliseconds per call: unbatched, few iterations)
// ---------------------------------------------------------------------------------------------
interface Shape {
  rows: number;
  inF: number;
  outF: number;
}
interface HeavyCase {
  name: string;
  shape: Shape;
  fn: () => unknown;
  baseline?: string;
}
interface HeavyRow {
  name: string;
  shape: Shape;
  ms: number;
  gflops: number;
  baseline: string | undefined;
  ratio: number | undefined;
}

const flops = (s: Shape): number => 2 * s.rows * s.inF * s.outF;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Like bench/lib/ratios.ts' measure(), but for calls of milliseconds: a few iterations per round. */
function measureHeavy(cases: readonly HeavyCase[], rounds = 3): HeavyRow[] {
  const samples = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const c of cases) {
      const bench = new Bench({ time: 200, iterations: 3, warmupIterations: 1, warmupTime: 0 });
      bench.add(c.name, c.fn as () => void, { async: false });
      bench.runSync();
      const result = bench.tasks[0]?.result;
      if (result?.state !== 'completed') throw new Error(`benchmark case ${c.name} failed`);
      samples.get(c.name)!.push(result.latency.p50);
    }
  }
  const ms = new Map([...samples].map(([name, v]) => [name, median(v)]));
  return cases.map((c) => {
    const own = ms.get(c.name)!;
    const base = c.baseline === undefined ? undefined : ms.get(c.baseline);
    return {
      name: c.name,
      shape: c.shape,
      ms: own,
      gflops: flops(c.shape) / (own * 1e6),
      baseline: c.baseline,
      ratio: base === undefined ? undefined : base / own,
    };
  });
}

function printHeavy(title: string, rows: readonly HeavyRow[]): void {
  const lines = [
    `### ${title}`,
    '',
    '| case | rows x in -> out | ms/call (median) | GFLOP/s | vs baseline | speed ratio |',
    '| --- | --- | ---: | ---: | --- | ---: |',
    ...rows.map((r) => {
      const s = `${r.shape.rows} x ${r.shape.inF} -> ${r.shape.outF}`;
      const ratio = r.ratio === undefined ? '' : `${r.ratio.toFixed(2)}x`;
      return `| ${r.name} | ${s} | ${r.ms.toFixed(2)} | ${r.gflops.toFixed(2)} | ${r.baseline ?? '(baseline)'} | ${ratio} |`;
    }),
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

function casesFor(shape: Shape, seed: number): { cases: HeavyCase[]; close: () => void } {
  const { rows, inF, outF } = shape;
  const x = seededFloats(seed, rows * inF, 2);
  const w = seededFloats(seed + 1, outF * inF, 1 / Math.sqrt(inF));
  const b = seededFloats(seed + 2, outF, 0.5);
  const y = new Float32Array(rows * outF);
  const ctx = NativeContext.open(lib);
  ctx.uploadWeights(w, b, outF, inF);
  const tag = `${rows}x${inF}->${outF}`;
  const naive = `C naive triple loop ${tag}`;
  return {
    cases: [
      { name: naive, shape, fn: () => faults.referenceLinearGelu(x, rows, w, b, outF, inF, y) },
      {
        name: `fixture blocked (linearGelu) ${tag}`,
        shape,
        fn: () => ctx.linearGelu(x, rows, y),
        baseline: naive,
      },
      {
        name: `TypeScript loop (double) ${tag}`,
        shape,
        fn: () => referenceLinearGelu(x, rows, w, b, outF, inF),
        baseline: naive,
      },
    ],
    close: () => ctx.close(),
  };
}

// ---------------------------------------------------------------------------------------------
// 3. End-to-end through the runtime (LEAD: add the Runtime rows here)
// ---------------------------------------------------------------------------------------------
/**
 * LEAD: requests/s and latency of linear + GELU through Runtime.run (admission + piscina + worker
 * + this native call), beside a direct NativeContext.linearGelu baseline in the same process.
 * Return the rows to print; an empty list prints nothing.
 */
async function runtimeRows(): Promise<BenchRow[]> {
  return [];
}

const overheadRows = await measure(overhead);
printRatios('Native call overhead, fixture (ratio = baseline ns / case ns; higher is faster)', overheadRows);

for (const [shape, seed] of [
  [{ rows: 32, inF: 256, outF: 256 }, 10],
  [{ rows: 128, inF: 1024, outF: 1024 }, 20],
] as const) {
  const { cases, close } = casesFor(shape, seed);
  printHeavy(
    'Linear + GELU, fixture vs naive C vs TypeScript (speed ratio = baseline ms / case ms)',
    measureHeavy(cases),
  );
  close();
}

const e2e = await runtimeRows();
if (e2e.length > 0) printRatios('End to end through the runtime', e2e);

tiny.close();
if (sink === Number.MIN_SAFE_INTEGER) process.stdout.write('\n'); // keeps `sink` observable
