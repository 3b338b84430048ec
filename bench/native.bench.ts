/**
 * Native layer: koffi call overhead, and fixture linear + GELU throughput beside the naive C triple
 * loop and a plain TypeScript loop, all measured in this one process, interleaved, medians of
 * per-round medians. Absolute numbers on shared 2-vCPU machines are noise; read the ratios.
 * The last table runs the same call end to end through LinearRuntime (the native worker) at 1 and 2
 * threads and compares its requests/s with the direct call on the main thread.
 * Run: npm run build && node dist/bench/native.bench.js (about a minute)
 */
import { Bench } from 'tinybench';
import { LinearRuntime } from '../src/linear/linear-runtime.js';
import { seededWeights } from '../src/linear/weights.js';
import {
  FixtureFaults,
  kRawHandle,
  loadNativeLibrary,
  NativeContext,
  referenceLinearGelu,
  seededFloats,
} from '../src/native/index.js';
import { benchArgs } from './lib/args.js';
import { median } from './lib/median.js';
import { type BenchCase, measure, printRatios } from './lib/ratios.js';

benchArgs('native.bench', []);

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

// TurboFan inlines jsCall, so this row is an add and a mask per iteration, not a call: it is the
// loop's own cost (measured 1.1 ns; the same loop with inlining off, --max-inlined-bytecode-size=0,
// 3.9 ns). The label says so, so the koffi row is not read as 15x a JS call.
const overhead: BenchCase[] = [
  {
    name: 'JS loop step (inlined call)',
    batch: BATCH,
    fn: () => {
      for (let i = 0; i < BATCH; i++) sink = jsCall(sink) & 0xff;
    },
  },
  {
    name: 'koffi: omni_abi_version()',
    batch: BATCH,
    baseline: 'JS loop step (inlined call)',
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
// 3. End to end through the runtime (requests/s: closed loop, a fixed number in flight)
// ---------------------------------------------------------------------------------------------
/** One fixed batch for every row: 8 rows x 256 -> 256 (about 1 MFLOP, tens of microseconds). */
const E2E = { rows: 8, inF: 256, outF: 256 };
const E2E_MS = 1200;
const E2E_ROUNDS = 3;

interface ThroughputCase {
  name: string;
  threads: number | undefined;
  inFlight: number;
  /** Runs for about `ms` and returns completed requests per second. */
  run: (ms: number) => Promise<number>;
  baseline?: string;
}
interface ThroughputRow {
  name: string;
  threads: number | undefined;
  inFlight: number;
  perSecond: number;
  baseline: string | undefined;
  ratio: number | undefined;
}

/** Keeps `inFlight` calls outstanding until `ms` have passed; completed calls per second. */
async function closedLoop(call: () => Promise<unknown>, inFlight: number, ms: number): Promise<number> {
  let done = 0;
  const t0 = performance.now();
  const lane = async (): Promise<void> => {
    while (performance.now() - t0 < ms) {
      await call();
      done++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return done / ((performance.now() - t0) / 1000);
}

/** Back-to-back synchronous calls on this thread for `ms`; calls per second. */
function syncLoop(call: () => unknown, ms: number): number {
  let done = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) {
    call();
    done++;
    t = performance.now();
  }
  return done / ((t - t0) / 1000);
}

/** Interleaved rounds (A, B, C, A, B, C, ...) after one short warm-up each; medians of rounds. */
async function measureThroughput(cases: readonly ThroughputCase[]): Promise<ThroughputRow[]> {
  for (const c of cases) await c.run(200);
  const samples = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  for (let round = 0; round < E2E_ROUNDS; round++) {
    for (const c of cases) samples.get(c.name)!.push(await c.run(E2E_MS));
  }
  const perSecond = new Map([...samples].map(([name, v]) => [name, median(v)]));
  return cases.map((c) => {
    const own = perSecond.get(c.name)!;
    const base = c.baseline === undefined ? undefined : perSecond.get(c.baseline);
    return {
      name: c.name,
      threads: c.threads,
      inFlight: c.inFlight,
      perSecond: own,
      baseline: c.baseline,
      ratio: base === undefined ? undefined : own / base,
    };
  });
}

function printThroughput(title: string, rows: readonly ThroughputRow[]): void {
  const lines = [
    `### ${title}`,
    '',
    '| case | threads | in flight | requests/s (median) | us/request | vs baseline | ratio |',
    '| --- | ---: | ---: | ---: | ---: | --- | ---: |',
    ...rows.map((r) => {
      const ratio = r.ratio === undefined ? '' : `${r.ratio.toFixed(2)}x`;
      const threads = r.threads === undefined ? '(main)' : String(r.threads);
      return `| ${r.name} | ${threads} | ${r.inFlight} | ${r.perSecond.toFixed(0)} | ${(1e6 / r.perSecond).toFixed(1)} | ${r.baseline ?? '(baseline)'} | ${ratio} |`;
    }),
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

/**
 * Linear + GELU through LinearRuntime.run (admission + envelope + piscina + the native worker +
 * the result transferred back) at 1 and 2 threads, beside the direct NativeContext.linearGelu call
 * on this thread, same shape and weights, in the same process. Ratio = case requests/s divided by
 * the direct call's: what the runtime keeps of a bare native call for this batch size.
 */
async function runtimeRows(): Promise<ThroughputRow[]> {
  const { rows, inF, outF } = E2E;
  const weights = seededWeights(inF, outF, 30);
  const x = seededFloats(31, rows * inF, 2);
  const y = new Float32Array(rows * outF);
  const ctx = NativeContext.open(lib);
  ctx.uploadWeights(weights.w, weights.b, outF, inF);
  const runtimes = await Promise.all(
    [1, 2].map((threads) =>
      LinearRuntime.start({ backend: 'fixture', threads, weights, admission: { requests: 32 } }),
    ),
  );
  const [one, two] = runtimes as [LinearRuntime, LinearRuntime];
  // Same answer through every path before timing anything.
  const expected = ctx.linearGelu(x, rows);
  for (const lr of runtimes) {
    if (!Buffer.from((await lr.run(x)).buffer).equals(Buffer.from(expected.buffer))) {
      throw new Error('runtime and direct outputs differ');
    }
  }
  const direct = `direct NativeContext.linearGelu ${rows}x${inF}->${outF}`;
  const viaRuntime = (lr: LinearRuntime) => () => lr.run(x);
  const cases: ThroughputCase[] = [
    {
      name: direct,
      threads: undefined,
      inFlight: 1,
      run: async (ms) => syncLoop(() => ctx.linearGelu(x, rows, y), ms),
    },
    {
      name: 'LinearRuntime.run, 1 thread',
      threads: 1,
      inFlight: 16,
      run: (ms) => closedLoop(viaRuntime(one), 16, ms),
      baseline: direct,
    },
    {
      name: 'LinearRuntime.run, 2 threads',
      threads: 2,
      inFlight: 16,
      run: (ms) => closedLoop(viaRuntime(two), 16, ms),
      baseline: direct,
    },
    {
      name: 'LinearRuntime.run, 1 thread, 1 in flight',
      threads: 1,
      inFlight: 1,
      run: (ms) => closedLoop(viaRuntime(one), 1, ms),
      baseline: direct,
    },
  ];
  try {
    return await measureThroughput(cases);
  } finally {
    await Promise.all(runtimes.map((lr) => lr.close()));
    ctx.close();
  }
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

printThroughput(
  `End to end through the runtime, fixture, ${E2E.rows} x ${E2E.inF} -> ${E2E.outF} (ratio = case requests/s / direct requests/s; higher is faster)`,
  await runtimeRows(),
);

tiny.close();
if (sink === Number.MIN_SAFE_INTEGER) process.stdout.write('\n'); // keeps `sink` observable
