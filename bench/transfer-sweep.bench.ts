/**
 * Where the runtime's moved-payload gap against piscina's `move()` comes from, 1 call in flight:
 * - a payload size sweep (4 KiB to 32 MiB): a copy, a clone or anything else touching the bytes
 *   would grow the gap with the size; a move costs the same at any size;
 * - a tiny call on both sides: the runtime's per-call cost that has nothing to do with a move;
 * - one-thread clones of a task message moving 1 MiB: piscina's, and the runtime's for a buffer
 *   input (its check at the post a named accessor, the elements plain) and for an input whose
 *   clone may run caller code (its checks read through accessor elements: clone's sparse path).
 * The sides alternate call batch by call batch, the order flipped every round; each row is the
 * median of the rounds, each gap the median of the rounds' paired differences. CPU is every
 * thread of the process (process.cpuUsage) and the main thread alone (Linux /proc).
 * Run: npx tsc -p tsconfig.json && node dist/bench/transfer-sweep.bench.js [rounds] [calls]
 * (defaults 20 and 200: each side's calls per round, fewer above 1 MiB, at least 20).
 */
import { readFileSync } from 'node:fs';
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { move, Piscina } from 'piscina';
import { taskPost } from '../src/envelope.js';
import { Runtime } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { benchArgs, countArg } from './lib/args.js';
import { median } from './lib/median.js';

const THREADS = 2;
const [ROUNDS, CALLS] = benchArgs('transfer-sweep.bench', [countArg('rounds', 20), countArg('calls', 200)]);
const SIZES = [4 << 10, 64 << 10, 1 << 20, 8 << 20, 32 << 20];

type Call = (buffer: ArrayBuffer) => Promise<unknown>;
interface Sample {
  readonly wall: number[];
  readonly cpu: number[];
  readonly main: number[];
}

function mainThreadUs(): number {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e3;
  } catch {
    return Number.NaN;
  }
}

/** `count` calls one after another; a returned buffer is the next call's (checked moved). */
async function calls(call: Call, buffer: ArrayBuffer, count: number): Promise<ArrayBuffer> {
  const bytes = buffer.byteLength;
  let held = buffer;
  for (let i = 0; i < count; i++) {
    const sent = held;
    const back = await call(sent);
    if (back instanceof ArrayBuffer) {
      if (sent.byteLength !== 0 || back.byteLength !== bytes) throw new Error('not a move');
      held = back;
    }
  }
  return held;
}

/** Per call, in µs: [piscina, runtime] samples, the two alternating, order flipped per round. */
async function pair(sides: readonly [Call, Call], bytes: number, count: number): Promise<Sample[]> {
  const buffers = [new ArrayBuffer(bytes), new ArrayBuffer(bytes)];
  const samples: Sample[] = [0, 1].map(() => ({ wall: [], cpu: [], main: [] }));
  for (const side of [0, 1]) buffers[side] = await calls(sides[side]!, buffers[side]!, count);
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const cpu = process.cpuUsage();
      const main = mainThreadUs();
      const start = process.hrtime.bigint();
      buffers[side] = await calls(sides[side]!, buffers[side]!, count);
      const wall = Number(process.hrtime.bigint() - start) / 1e3;
      const used = process.cpuUsage(cpu);
      samples[side]!.wall.push(wall / count);
      samples[side]!.cpu.push((used.user + used.system) / count);
      samples[side]!.main.push((mainThreadUs() - main) / count);
    }
  }
  return samples;
}

function row(name: string, [piscina, runtime]: Sample[]): string {
  const gap = (key: keyof Sample) => median(runtime![key].map((v, i) => v - piscina![key][i]!)).toFixed(1);
  const p = median(piscina!.wall);
  const r = median(runtime!.wall);
  return `| ${name} | ${p.toFixed(1)} | ${r.toFixed(1)} | ${gap('wall')} | ${(p / r).toFixed(2)}x | ${gap('cpu')} | ${gap('main')} |\n`;
}

type Clone = readonly [message: () => unknown, unwrap: (m: unknown) => ArrayBuffer];

/**
 * µs per post + receive of a task message on one thread (what piscina posts around it too), for
 * each variant: a batch of each per round, in turn, the order flipped every round (the first
 * round warms up, uncounted), so all of them meet the same stretches of machine time.
 */
function cloneUs(variants: readonly Clone[]): number[] {
  const { port1, port2 } = new MessageChannel();
  const batch = 2000;
  const rounds: number[][] = variants.map(() => []);
  for (let round = 0; round < ROUNDS + 1; round++) {
    const order = variants.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    for (const v of order) {
      const [message, unwrap] = variants[v]!;
      const start = process.hrtime.bigint();
      for (let i = 0; i < batch; i++) {
        port1.postMessage({ task: message(), taskId: 5, filename: '/x/entry-shim.cjs', name: 'default' }, [
          held,
        ]);
        held = unwrap((receiveMessageOnPort(port2)!.message as { task: unknown }).task);
      }
      if (round > 0) rounds[v]!.push(Number(process.hrtime.bigint() - start) / 1e3 / batch);
    }
  }
  port1.close();
  return rounds.map(median);
}

let held = new ArrayBuffer(1 << 20);

const runtime = await Runtime.start({
  worker: builtModuleUrl('test/fixtures/runtime-bench-worker.js'),
  threads: THREADS,
  admission: { requests: 64 },
});
const pool = new Piscina({
  filename: builtModuleUrl('bench/plain-worker.js'),
  minThreads: THREADS,
  maxThreads: THREADS,
});
const moved: readonly [Call, Call] = [
  (b) => pool.run(move(b), { name: 'moveBack' }),
  (b) => runtime.run(b, { transfer: [b] }),
];

// Both sides' code optimized before the first row (the first rows read high without this).
const tiny: readonly [Call, Call] = [() => pool.run(1), () => runtime.run(1)];
for (const side of [0, 1]) {
  await calls(tiny[side]!, new ArrayBuffer(0), 2000);
  await calls(moved[side]!, new ArrayBuffer(4 << 10), 2000);
}

process.stdout.write(
  `Node ${process.version}, ${THREADS} threads per pool, 1 call in flight, ${ROUNDS} rounds; µs per call.\n\n` +
    '| payload | piscina | runtime | gap | ratio | CPU gap, all threads | CPU gap, main thread |\n' +
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n',
);
process.stdout.write(row('none (tiny call)', await pair(tiny, 0, CALLS)));
for (const bytes of SIZES) {
  // Fewer calls for the largest payloads: their time per call does not grow if nothing copies.
  const count = Math.max(20, Math.round(CALLS * Math.min(1, (1 << 20) / bytes)));
  const name = bytes >= 1 << 20 ? `${bytes >> 20} MiB moved` : `${bytes >> 10} KiB moved`;
  process.stdout.write(row(name, await pair(moved, bytes, count)));
}
await Promise.all([runtime.close(), pool.close()]);

const claim = { admission: 1876543210, slot: 3, generation: 17, units: 1 };
const kValue = Piscina.valueSymbol;
const runtimeMessage = (input: unknown) => () =>
  (taskPost(claim, input, 0, [held]) as unknown as Record<symbol, unknown>)[kValue];
const first = (m: unknown) => (m as ArrayBuffer[])[0]!;
const nested = (m: unknown) => (m as ArrayBuffer[][])[0]![0]!;
const clones: [string, ...Clone][] = [
  ['piscina, input the buffer', () => held, (m) => m as ArrayBuffer],
  ['runtime, input the buffer', () => runtimeMessage(held)(), first],
  ['piscina, input [buffer]', () => [held], first],
  ['runtime, input [buffer]', () => runtimeMessage([held])(), nested],
];
process.stdout.write('\nTask message moving 1 MiB, post + receive on one thread, interleaved; µs:\n');
const cloned = cloneUs(clones.map(([, message, unwrap]) => [message, unwrap] as const));
for (const [i, [name]] of clones.entries()) process.stdout.write(`- ${name}: ${cloned[i]!.toFixed(2)}\n`);
