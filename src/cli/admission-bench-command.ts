/**
 * `omni-runtime bench admission`: N threads each loop tryAdmit/release on one shared
 * BoundedAdmission, against the same N threads doing raw compare-exchange/sub on one shared
 * word, measured in this process, interleaved, and reported as a ratio.
 */
import { Worker } from 'node:worker_threads';
import { BoundedAdmission } from '../admission/index.js';
import { builtModuleUrl } from '../paths.js';
import {
  BENCH_REQUESTS,
  BENCH_UNITS,
  CONTROL_WORDS,
  type ContenderData,
  type ContentionMode,
  DONE,
  GO,
  READY,
  STOP,
} from './admission-bench-protocol.js';
import { numberFlag, parseFlags, UsageError } from './args.js';
import { BenchError } from './bench-error.js';
import { figures } from './bench-report.js';

export const ADMISSION_HELP = `Usage: omni-runtime bench admission [flags]

N worker threads each loop admit/release pairs on ONE shared BoundedAdmission (attached from
its SharedArrayBuffer), against the same N threads doing a raw Atomics compare-exchange + sub
on one shared word. Rounds alternate (raw, admission, raw, ...) in this process; the ratio of
the medians is the result (1.0 = as fast as raw Atomics; the target is >= 0.7 request-only,
>= 0.8 with --cost).

Flags:
  --threads N     contending threads (default 2)
  --cost N        admit N units per pair against a unit ceiling (64-bit word; baseline: raw
                  64-bit CAS); without it, request-only (baseline: raw Int32 CAS)
  --duration S    measured seconds over all rounds together (default 6)
  --rounds N      rounds per side (default 3)
  --json          print the result as JSON
  -h, --help      this help
Exit status: 0 once measured; 2 for a usage mistake; 1 for any other failure, such as
OMNI_ERR_BENCH (a thread did not answer or was refused, or the admission leaked capacity).
`;

const FLAGS = {
  threads: { type: 'string' },
  cost: { type: 'string' },
  duration: { type: 'string' },
  rounds: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1));

/** Waits (without blocking the event loop, so worker errors arrive) until `word` reaches `count`. */
async function until(
  ctl: Int32Array,
  word: number,
  count: number,
  failed: () => Error | undefined,
): Promise<void> {
  const deadline = performance.now() + 30_000;
  while (Atomics.load(ctl, word) < count) {
    const error = failed();
    if (error) throw error;
    if (performance.now() > deadline) throw new BenchError('benchmark threads did not answer within 30 s');
    await tick();
  }
}

/** One round: start the threads, time GO..STOP, return admit/release pairs per second. */
async function round(
  mode: ContentionMode,
  target: SharedArrayBuffer,
  threads: number,
  cost: number,
  ms: number,
): Promise<number> {
  const control = new SharedArrayBuffer(4 * CONTROL_WORDS);
  const results = new SharedArrayBuffer(16 * threads);
  const ctl = new Int32Array(control);
  let error: Error | undefined;
  const url = new URL(builtModuleUrl('src/cli/admission-bench-worker.js'));
  const workers = Array.from({ length: threads }, (_, index) => {
    const data: ContenderData = { mode, target, control, results, index, cost };
    const worker = new Worker(url, { workerData: data });
    worker.on('error', (err) => {
      error ??= err;
    });
    return worker;
  });
  const exited = workers.map((w) => new Promise((resolve) => w.once('exit', resolve)));
  try {
    await until(ctl, READY, threads, () => error);
    const start = performance.now();
    Atomics.store(ctl, GO, 1);
    Atomics.notify(ctl, GO);
    await new Promise((resolve) => setTimeout(resolve, ms));
    Atomics.store(ctl, STOP, 1);
    const seconds = (performance.now() - start) / 1000;
    await until(ctl, DONE, threads, () => error);
    const counts = new Float64Array(results);
    let pairs = 0;
    for (let i = 0; i < threads; i++) {
      pairs += counts[2 * i]!;
      if (counts[2 * i + 1]! > 0)
        throw new BenchError(`${mode}: a thread was refused; the bound is too small`);
    }
    return pairs / seconds;
  } finally {
    Atomics.store(ctl, STOP, 1);
    Atomics.store(ctl, GO, 1);
    Atomics.notify(ctl, GO);
    await Promise.all(exited);
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export interface AdmissionBenchConfig {
  readonly threads: number;
  /** Units per pair; 0: request-only. */
  readonly cost: number;
  readonly durationS: number;
  readonly rounds: number;
  readonly json: boolean;
}

/** Returns the checked flags, or 'help' when --help was asked for; a mistake is a UsageError. */
export function parseAdmissionBenchArgs(argv: readonly string[]): AdmissionBenchConfig | 'help' {
  const { values, positionals } = parseFlags('bench admission', argv, FLAGS);
  if (values.help) return 'help';
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument '${positionals[0]}'`, 'bench admission');
  return {
    threads: numberFlag('threads', values.threads, 2, { min: 1, max: 64, integer: true }),
    cost: numberFlag('cost', values.cost, 0, { min: 1, max: 1 << 20, integer: true }),
    durationS: numberFlag('duration', values.duration, 6, { greater: 0, max: 3600 }),
    rounds: numberFlag('rounds', values.rounds, 3, { min: 1, max: 100, integer: true }),
    json: values.json === true,
  };
}

export async function runAdmissionBenchCommand(argv: readonly string[]): Promise<number> {
  const config = parseAdmissionBenchArgs(argv);
  if (config === 'help') {
    process.stdout.write(ADMISSION_HELP);
    return 0;
  }
  const { threads, cost, durationS, rounds } = config;
  const roundMs = (durationS * 1000) / (2 * rounds);

  const admission = new BoundedAdmission(
    cost === 0 ? { requests: BENCH_REQUESTS } : { requests: BENCH_REQUESTS, units: BENCH_UNITS },
  );
  const rawMode: ContentionMode = cost === 0 ? 'raw32' : 'raw64';
  const raw = new SharedArrayBuffer(8);
  const rawRates: number[] = [];
  const ourRates: number[] = [];
  for (let r = 0; r < rounds; r++) {
    rawRates.push(await round(rawMode, raw, threads, cost, roundMs));
    ourRates.push(await round('admission', admission.buffer, threads, cost, roundMs));
  }
  const report = admission.report();
  if (report.depth !== 0 || report.units !== 0)
    throw new BenchError(`admission leaked capacity: depth ${report.depth}, units ${report.units}`);

  const rawOps = median(rawRates);
  const ourOps = median(ourRates);
  const result = {
    threads,
    mode: cost === 0 ? 'requests' : 'units',
    cost: cost === 0 ? null : cost,
    rounds,
    roundSeconds: roundMs / 1000,
    raw: {
      name: rawMode === 'raw32' ? 'raw Int32 CAS + sub' : 'raw 64-bit CAS + sub',
      opsPerSec: rawOps,
      rounds: rawRates,
    },
    admission: {
      name: cost === 0 ? 'tryAdmit() + release' : `tryAdmit(${cost}) + release`,
      opsPerSec: ourOps,
      rounds: ourRates,
    },
    /** Admission pairs per second over raw pairs per second (1 = as fast as raw Atomics). */
    ratio: ourOps / rawOps,
  };
  if (config.json) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  }
  const nsPerThread = (ops: number): string => ((1e9 * threads) / ops).toFixed(1);
  const rows = [
    ['case', 'pairs/s (median)', 'ns/pair per thread', 'vs raw'],
    [result.raw.name, Math.round(rawOps).toLocaleString('en-US'), nsPerThread(rawOps), '1.00'],
    [
      result.admission.name,
      Math.round(ourOps).toLocaleString('en-US'),
      nsPerThread(ourOps),
      result.ratio.toFixed(2),
    ],
  ];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
  const lines = rows.map((row) =>
    row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '),
  );
  // A round's length in three figures, as bench's phase length: one under 5 ms showed as 0.00 s.
  process.stdout.write(
    `omni-runtime bench admission: ${threads} thread(s) contending on one shared word, ${rounds} round(s) x ${figures(roundMs / 1000)} s per side, interleaved\n\n` +
      `${lines.join('\n')}\n\nratio ${result.ratio.toFixed(2)} (admission pairs/s / raw pairs/s; target >= ${cost === 0 ? '0.7' : '0.8'})\n`,
  );
  return 0;
}
