/**
 * The runtime against its baselines, in one process, interleaved (bench/lib/ratios.ts):
 * tiny tasks at 1 and 64 in flight through the bounded Runtime, plain piscina running the
 * same trivial worker, and a raw worker_threads postMessage echo; then a 1 MiB payload moved
 * vs copied (Runtime with `transfer` vs without; piscina with `move()` vs without).
 * Two tables say where the runtime's time goes: CPU per task across all threads (less
 * sensitive than wall time to other processes on a shared machine), and the cost of cloning
 * the runtime's task and reply messages compared with piscina's own.
 * Run: npx tsc -p tsconfig.json && node dist/bench/runtime.bench.js [rounds] [msPerRound]
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { move, Piscina } from 'piscina';
import { Runtime } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { benchArgs, countArg, positiveArg } from './lib/args.js';
import { median } from './lib/median.js';
import { type BenchCase, type BenchRow, measure, printRatios } from './lib/ratios.js';

const [ROUNDS, TIME_MS] = benchArgs('runtime.bench', [countArg('rounds', 9), positiveArg('msPerRound', 200)]);
const THREADS = 2;
const IN_FLIGHT = 64;
const PAYLOAD = 1 << 20;
const CPU_TASKS = 64 * 50;

/** Raw postMessage echo over `threads` workers, round-robin: the floor under any pool. */
class RawEcho {
  readonly #workers: Worker[];
  #pending = 0;
  #done: (() => void) | undefined;

  constructor(threads: number) {
    const source = `const { parentPort } = require('node:worker_threads');
      parentPort.on('message', (m) => parentPort.postMessage(m));`;
    this.#workers = Array.from({ length: threads }, () => {
      const worker = new Worker(source, { eval: true });
      worker.on('message', () => {
        if (--this.#pending === 0) this.#done?.();
      });
      return worker;
    });
  }

  run(count: number): Promise<void> {
    return new Promise((resolve) => {
      this.#done = resolve;
      this.#pending = count;
      for (let i = 0; i < count; i++) this.#workers[i % this.#workers.length]!.postMessage(i);
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.terminate()));
  }
}

function inFlight<T>(count: number, call: (i: number) => Promise<T>): Promise<T[]> {
  const calls = new Array<Promise<T>>(count);
  for (let i = 0; i < count; i++) calls[i] = call(i);
  return Promise.all(calls);
}

/**
 * The main thread's CPU time in ns (Linux: the scheduler's own count for this thread), or
 * undefined where /proc is not there. process.cpuUsage() adds up every thread.
 */
function mainThreadNs(): number | undefined {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return undefined;
  }
}

/**
 * CPU time (user + system, every thread of this process) per task at IN_FLIGHT in flight,
 * interleaved rounds, medians, printed as rows of the same table format; where it can be read,
 * the main thread's share too. The order of the cases flips every round: measured here, the
 * case run second in a round read ~1-2 us lower than the same build run first.
 */
async function cpuPerTask(cases: ReadonlyArray<{ name: string; call: (i: number) => Promise<unknown> }>) {
  const all = new Map(cases.map((c) => [c.name, [] as number[]]));
  const main = new Map(cases.map((c) => [c.name, [] as number[]]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of round % 2 === 0 ? cases : cases.toReversed()) {
      const before = process.cpuUsage();
      const mainBefore = mainThreadNs();
      for (let done = 0; done < CPU_TASKS; done += IN_FLIGHT) await inFlight(IN_FLIGHT, c.call);
      const mainAfter = mainThreadNs();
      const used = process.cpuUsage(before);
      all.get(c.name)!.push(((used.user + used.system) * 1000) / CPU_TASKS);
      if (mainBefore !== undefined && mainAfter !== undefined) {
        main.get(c.name)!.push((mainAfter - mainBefore) / CPU_TASKS);
      }
    }
  }
  const rows = (samples: Map<string, number[]>, suffix: string): BenchRow[] => {
    const base = median(samples.get(cases[0]!.name)!);
    return cases.map((c, i): BenchRow => {
      const ns = median(samples.get(c.name)!);
      return {
        name: `${c.name}${suffix}`,
        nsPerOp: ns,
        baseline: i === 0 ? undefined : `${cases[0]!.name}${suffix}`,
        ratio: i === 0 ? undefined : base / ns,
        target: undefined,
        met: undefined,
      };
    });
  };
  const mainRows = main.get(cases[0]!.name)!.length === 0 ? [] : rows(main, ', main thread');
  return [...rows(all, ''), ...mainRows];
}

/** Structured clone of one message through a MessageChannel on this thread, per message. */
function cloneCases(): BenchCase[] {
  const { port1, port2 } = new MessageChannel();
  port1.unref();
  const batch = 200;
  // src/envelope.ts TaskMessage: input, then the claim (its admission is a random id up to
  // 2^31 - 1, src/admission/internal.ts; its units are the cost) and deadlineAt.
  const message = [1, 1876543210, 3, 17, 1, 0];
  // What piscina itself wraps around every task and every response.
  const task = (value: unknown) => ({
    task: value,
    taskId: 5,
    filename: 'file:///x/entry-shim.cjs',
    name: 'default',
  });
  const response = (value: unknown) => ({ taskId: 5, result: value, error: null, time: 12 });
  const clone = (name: string, message: unknown, baseline?: string): BenchCase => ({
    name,
    batch,
    fn: () => {
      for (let i = 0; i < batch; i++) {
        port1.postMessage(message);
        receiveMessageOnPort(port2);
      }
    },
    ...(baseline ? { baseline } : {}),
  });
  return [
    clone('piscina task message, input 1', task(1)),
    clone('runtime task message (packed array)', task(message), 'piscina task message, input 1'),
    clone('piscina response message, result 1', response(1)),
    clone(
      'runtime response message ({ ok, value })',
      response({ ok: true, value: 1 }),
      'piscina response message, result 1',
    ),
  ];
}

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(`bench sanity check failed: ${what}`);
}

const runtime = await Runtime.start({
  worker: builtModuleUrl('test/fixtures/runtime-bench-worker.js'),
  threads: THREADS,
  admission: { requests: IN_FLIGHT },
});
const pool = new Piscina({
  filename: builtModuleUrl('bench/plain-worker.js'),
  minThreads: THREADS,
  maxThreads: THREADS,
});
const raw = new RawEcho(THREADS);

// Warm every path (piscina reports threads ready before their module has loaded) and check
// that moves really move: the sender's buffer is detached and the whole payload comes back.
await inFlight(IN_FLIGHT, (i) => pool.run(i));
await inFlight(IN_FLIGHT, (i) => runtime.run(i));
await raw.run(IN_FLIGHT);
let runtimeBuffer = new ArrayBuffer(PAYLOAD);
let pooledBuffer = new ArrayBuffer(PAYLOAD);
const copied = new ArrayBuffer(PAYLOAD);
{
  const sent = runtimeBuffer;
  runtimeBuffer = await runtime.run<ArrayBuffer>(sent, { transfer: [sent] });
  check(sent.byteLength === 0 && runtimeBuffer.byteLength === PAYLOAD, 'runtime transfer round trip');
  const moved = pooledBuffer;
  pooledBuffer = (await pool.run(move(moved), { name: 'moveBack' })) as ArrayBuffer;
  check(moved.byteLength === 0 && pooledBuffer.byteLength === PAYLOAD, 'piscina move() round trip');
  const back = await runtime.run<{ copy: ArrayBuffer }>({ copy: copied });
  check(copied.byteLength === PAYLOAD && back.copy.byteLength === PAYLOAD, 'runtime copy round trip');
}

const tinyOne: BenchCase[] = [
  { name: 'piscina, 1 in flight', batch: 1, async: true, fn: () => pool.run(1) },
  {
    name: 'raw postMessage, 1 in flight',
    batch: 1,
    async: true,
    fn: () => raw.run(1),
    baseline: 'piscina, 1 in flight',
  },
  {
    name: 'bounded runtime, 1 in flight',
    batch: 1,
    async: true,
    fn: () => runtime.run(1),
    baseline: 'piscina, 1 in flight',
  },
];

const tinyMany: BenchCase[] = [
  {
    name: `piscina, ${IN_FLIGHT} in flight`,
    batch: IN_FLIGHT,
    async: true,
    fn: () => inFlight(IN_FLIGHT, (i) => pool.run(i)),
  },
  {
    name: `raw postMessage, ${IN_FLIGHT} in flight`,
    batch: IN_FLIGHT,
    async: true,
    fn: () => raw.run(IN_FLIGHT),
    baseline: `piscina, ${IN_FLIGHT} in flight`,
  },
  {
    name: `bounded runtime, ${IN_FLIGHT} in flight`,
    batch: IN_FLIGHT,
    async: true,
    fn: () => inFlight(IN_FLIGHT, (i) => runtime.run(i)),
    baseline: `piscina, ${IN_FLIGHT} in flight`,
    target: 0.95,
  },
];

const payload: BenchCase[] = [
  {
    name: 'piscina move() 1 MiB',
    batch: 1,
    async: true,
    fn: async () => {
      pooledBuffer = (await pool.run(move(pooledBuffer), { name: 'moveBack' })) as ArrayBuffer;
    },
  },
  {
    name: 'piscina copy 1 MiB',
    batch: 1,
    async: true,
    fn: () => pool.run({ copy: copied }),
    baseline: 'piscina move() 1 MiB',
  },
  {
    name: 'runtime copy 1 MiB',
    batch: 1,
    async: true,
    fn: () => runtime.run({ copy: copied }),
    baseline: 'piscina move() 1 MiB',
  },
  {
    name: 'runtime transfer 1 MiB',
    batch: 1,
    async: true,
    fn: async () => {
      const sent = runtimeBuffer;
      runtimeBuffer = await runtime.run<ArrayBuffer>(sent, { transfer: [sent] });
    },
    baseline: 'piscina move() 1 MiB',
    target: 0.95,
  },
  {
    name: 'runtime transfer 1 MiB (vs runtime copy)',
    batch: 1,
    async: true,
    fn: async () => {
      const sent = runtimeBuffer;
      runtimeBuffer = await runtime.run<ArrayBuffer>(sent, { transfer: [sent] });
    },
    baseline: 'runtime copy 1 MiB',
    target: 5,
  },
];

process.stdout.write(
  `Node ${process.version}, ${availableParallelism()} CPUs (load average ${loadavg()[0]!.toFixed(1)}), ` +
    `${THREADS} threads per pool; ratio = baseline ns / case ns, medians of interleaved rounds: ` +
    `${ROUNDS} of ${TIME_MS} ms each for the call tables, ${ROUNDS} of 3,200 tasks for CPU per ` +
    'task (CPU ns, not wall), 5 of 100 ms for the message clone.\n\n',
);
printRatios('Tiny tasks, 1 in flight', await measure(tinyOne, ROUNDS, TIME_MS));
printRatios(`Tiny tasks, ${IN_FLIGHT} in flight`, await measure(tinyMany, ROUNDS, TIME_MS));
printRatios('1 MiB payload, round trip', await measure(payload, ROUNDS, TIME_MS));
printRatios(
  `CPU per task, all threads, ${IN_FLIGHT} in flight (where the time goes)`,
  await cpuPerTask([
    { name: 'piscina', call: (i) => pool.run(i) },
    { name: 'bounded runtime', call: (i) => runtime.run(i) },
  ]),
);
printRatios(
  'Message clone, post + receive on one thread (where the time goes)',
  await measure(cloneCases(), 5, 100),
);

const report = runtime.report();
check(report.depth === 0 && report.rejected === 0 && report.failed === 0, 'runtime ended clean');
check(runtimeBuffer.byteLength === PAYLOAD && pooledBuffer.byteLength === PAYLOAD, 'payloads intact');
await Promise.all([runtime.close(), pool.close(), raw.close()]);
