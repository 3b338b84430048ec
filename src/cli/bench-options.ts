/**
 * `omni-runtime bench` flags: their help text, their defaults and their checks. Every mistake
 * is a UsageError (one line, exit 2) raised before any thread starts.
 */
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { decimalValue } from '../decimal.js';
import { type NativeLibraryPaths, rowsPerCall } from '../linear/start-options.js';
import { backendFromEnv } from '../native/backend.js';
import { MAX_DEVICE } from '../native/device.js';
import { nearestName } from '../nearest-name.js';
import {
  checkBoundFlags,
  choiceFlag,
  deadlineFlag,
  libraryFlags,
  numberFlag,
  parseFlags,
  UsageError,
} from './args.js';

export type BackendFlag = 'fixture' | 'cuda' | 'auto';

/** An offered load: requests per second, or a multiple of the calibrated capacity ("2x"). */
export interface RateSpec {
  readonly value: number;
  readonly relative: boolean;
}

export interface BenchConfig {
  /** Seconds of offered load over all phases together (calibration, warm-up and drains come on top). */
  readonly durationS: number;
  /** Seconds each phase offers load: durationS / (rates x 2 modes), never 0 (at least MIN_VALUE). */
  readonly phaseS: number;
  readonly calibrateS: number;
  readonly threads: number;
  readonly requests: number;
  readonly units: number;
  readonly rates: readonly RateSpec[];
  /** undefined: OMNI_BACKEND decides (it is set), else the fixture. */
  readonly backend: BackendFlag | undefined;
  /** Neither --backend nor OMNI_BACKEND chose it: the report says so, not "requested". */
  readonly backendIsDefault: boolean;
  /** Native libraries to load instead of the package's build. */
  readonly libraries: NativeLibraryPaths;
  /** undefined: the runtime's own choice (OMNI_CUDA_DEVICE, else 0). */
  readonly device: number | undefined;
  readonly outDir: string;
  readonly json: boolean;
  readonly seed: number;
  readonly deadlineMs: number;
  readonly inFeatures: number;
  readonly outFeatures: number;
  /** Each request's rows (its cost) are uniform in 1..maxRows. */
  readonly maxRows: number;
}

export const DEFAULT_RATES: readonly RateSpec[] = [0.5, 1, 2, 4].map((value) => ({ value, relative: true }));
const DEFAULT_THREADS = Math.max(1, Math.min(4, availableParallelism()));
/** The serial scheduler's claim window: a runtime's request bound may not exceed it. */
const MAX_REQUESTS = 1 << 16;

export const BENCH_FLAGS = {
  duration: { type: 'string' },
  calibrate: { type: 'string' },
  threads: { type: 'string' },
  requests: { type: 'string' },
  units: { type: 'string' },
  rates: { type: 'string' },
  backend: { type: 'string' },
  'cuda-library': { type: 'string' },
  'fixture-library': { type: 'string' },
  device: { type: 'string' },
  out: { type: 'string' },
  json: { type: 'boolean' },
  seed: { type: 'string' },
  'deadline-ms': { type: 'string' },
  'in-features': { type: 'string' },
  'out-features': { type: 'string' },
  'max-rows': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const BENCH_HELP = `Usage: omni-runtime bench [flags]
       omni-runtime bench admission [flags]   (admit/release microbenchmark; see its --help)

Drives the built-in native worker (y = GELU(x W^T + b), CPU fixture by default) with an
open-loop Poisson arrival process at several offered loads. Each load runs twice in this
process: the default serial scheduler (unbounded queue) and bounded admission. Every request
carries a deadline. Prints a table (or JSON) and writes results.json and SVG charts (the
charts need the optional packages vega and vega-lite; without them they are skipped).

Flags:
  --duration S       seconds of offered load over ALL phases together (default 20; at most
                     86400); each of the rates x 2 modes phases gets an equal share.
                     Calibration, the bounded runtime's warm-up (as many calls as
                     calibration made) and the drain after each phase come on top.
  --calibrate S      seconds of closed-loop capacity calibration (default 1; at most 3600)
  --rates LIST       offered loads, comma-separated: requests/s (250) or multiples of the
                     calibrated capacity (2x), each once; default 0.5x,1x,2x,4x
  --threads N        worker threads per runtime (default ${DEFAULT_THREADS})
  --requests N       bounded mode: outstanding request bound (default 8 x threads)
  --units N          bounded mode: outstanding unit (row) ceiling (default 8 x requests)
  --deadline-ms MS   every request's deadline (default 1000; any finite number > 0)
  --max-rows N       each request's rows (its cost in units) are uniform in 1..N (default 16,
                     or --units when that is smaller); one input is made per row count, and
                     together they may take at most 1 GiB (723 rows at 1024 features)
  --in-features N    layer input width (default 1024)
  --out-features N   layer output width (default 1024)
  --backend B        fixture | cuda | auto (default: OMNI_BACKEND if set, else fixture)
  --cuda-library PATH, --fixture-library PATH
                     load this native library instead of the package's (e.g. a CUDA
                     library built for your GPUs); results.json names the one loaded.
                     --cuda-library needs --backend cuda or auto (or OMNI_BACKEND)
  --device N         CUDA device (default: OMNI_CUDA_DEVICE if set, else 0)
  --seed N           seed for arrival times, costs and the layer's weights (default 1): same
                     seed, same load
  --out DIR          where results.json and the charts go (default ./bench-results); an
                     earlier run's there are replaced (its charts removed if these are
                     skipped), nothing else is touched; a folder where one of those names is
                     a file no earlier run wrote is refused
  --json             print a machine-readable summary on stdout instead of the table
  -h, --help         this help
Exit status: 0 once measured; 2 for a usage mistake; 1 for any other failure, such as
OMNI_ERR_BENCH (a calibration that completed nothing while --rates are multiples of it, a
phase that did not drain, requests that failed: their results are written and printed first),
a native library that will not load, or a results.json that cannot be written (the table is
printed first). A failure is one line on stderr. Stopped by SIGINT (Ctrl-C), SIGTERM or
SIGHUP (its terminal closed), it prints nothing on stdout, writes no partial results, removes
a --out folder it made while empty, says so on stderr and ends by the signal (130, 143, 129
in a shell).
`;

/**
 * The most arrivals one phase may offer. The generator is open loop: every arrival is a call
 * held in memory until it ends, and the unbounded mode queues them all. A million is far above
 * any overload worth measuring here (4x a 1,000/s capacity for 2.5 s is 10,000) and well below
 * what exhausts the heap.
 */
export const MAX_PHASE_ARRIVALS = 1_000_000;

/** A rate whose phase would offer more than MAX_PHASE_ARRIVALS is a usage mistake. */
export function checkPhaseArrivals(rate: number, phaseS: number, label: string): void {
  const arrivals = rate * phaseS;
  if (arrivals > MAX_PHASE_ARRIVALS) {
    throw new UsageError(
      `--rates ${label} would offer ${Math.round(arrivals).toLocaleString('en-US')} requests in one ${phaseS.toFixed(2)} s phase (at most ${MAX_PHASE_ARRIVALS.toLocaleString('en-US')}): lower --rates or --duration`,
    );
  }
}

/**
 * The most bytes the prepared inputs may take. Every row count 1..maxRows gets its own input
 * (run() copies its whole buffer, so inputs cannot be views of one), which is quadratic in
 * --max-rows: 4,096 rows of 1,024 floats would be 34 GB, allocated and filled before any load.
 */
export const MAX_INPUT_BYTES = 2 ** 30;

/** Bytes of the inputs for 1..maxRows rows of inFeatures float32s. */
export function inputBytes(inFeatures: number, maxRows: number): number {
  return ((maxRows * (maxRows + 1)) / 2) * inFeatures * Float32Array.BYTES_PER_ELEMENT;
}

/** Parses "0.5x,1x,250": each a number > 0, optionally suffixed x (a multiple of capacity). */
export function rateListFlag(raw: string | undefined): RateSpec[] {
  if (raw === undefined) return [...DEFAULT_RATES];
  const rates = raw.split(',').map((part) => {
    const text = part.trim();
    const relative = /x$/i.test(text);
    const number = relative ? text.slice(0, -1) : text;
    // Read as every number flag is (decimalValue): '1e-400' is > 0, not the 0 Number() makes of it.
    const value = decimalValue(number);
    if (value === undefined || !Number.isFinite(value) || value <= 0) {
      throw new UsageError(
        `--rates must be a comma-separated list of numbers > 0 (requests/s) or multiples like 2x, got ${JSON.stringify(raw)}`,
      );
    }
    return { value, relative, text };
  });
  // Two phases at one rate would be drawn as one line in the charts, each half of it. The
  // refusal names the rates as typed: the number read ('1e-400' and '2e-400' are both 5e-324)
  // is one the user may never have written.
  const seen = new Map<string, string>();
  for (const { value, relative, text } of rates) {
    const key = `${value}${relative ? 'x' : ''}`;
    const earlier = seen.get(key);
    if (earlier === text) throw new UsageError(`--rates lists ${text} more than once`);
    if (earlier !== undefined) {
      throw new UsageError(`--rates lists ${earlier} and ${text}, which read as one rate`);
    }
    seen.set(key, text);
  }
  return rates.map(({ value, relative }) => ({ value, relative }));
}

/** --out: a folder path; an empty one would silently mean the current folder. */
function outDirFlag(raw: string | undefined): string {
  if (raw !== undefined && raw.trim() === '') throw new UsageError('--out must not be empty');
  return resolve(raw ?? 'bench-results');
}

/** Returns the checked configuration, or 'help' when --help was asked for. */
export function parseBenchArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): BenchConfig | 'help' {
  const { values, positionals } = parseFlags('bench', argv, BENCH_FLAGS);
  if (values.help) return 'help';
  if (positionals[0] === 'admission') {
    // `bench --json admission`: the subcommand is read only right after `bench`.
    throw new UsageError(
      "the admission subcommand comes right after bench: 'bench admission [flags]'",
      'bench',
    );
  }
  if (positionals.length > 0) {
    const near = nearestName(positionals[0]!, ['admission']);
    const guess = near === undefined ? '' : ` (did you mean ${near}?)`;
    throw new UsageError(`unknown subcommand or argument '${positionals[0]}'${guess}`, 'bench');
  }
  const rates = rateListFlag(values.rates);
  const durationS = numberFlag('duration', values.duration, 20, { greater: 0, max: 86_400 });
  const threads = numberFlag('threads', values.threads, DEFAULT_THREADS, { min: 1, max: 256, integer: true });
  const requests = numberFlag('requests', values.requests, Math.min(MAX_REQUESTS, 8 * threads), {
    min: 1,
    max: MAX_REQUESTS,
    integer: true,
  });
  const units = numberFlag('units', values.units, 8 * requests, {
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    integer: true,
  });
  checkBoundFlags(requests, units);
  // A request's rows are its cost in units: rows above the ceiling could never be admitted. The
  // default stays within a small ceiling; an explicit --max-rows above it is a mistake.
  const maxRows = numberFlag('max-rows', values['max-rows'], Math.min(16, units), {
    min: 1,
    max: 4096,
    integer: true,
  });
  if (maxRows > units) throw new UsageError(`--max-rows ${maxRows} is above --units ${units}`);
  const inFeatures = numberFlag('in-features', values['in-features'], 1024, {
    min: 1,
    max: 16_384,
    integer: true,
  });
  if (inputBytes(inFeatures, maxRows) > MAX_INPUT_BYTES) {
    throw new UsageError(
      `--max-rows ${maxRows} with --in-features ${inFeatures} needs ${Math.ceil(inputBytes(inFeatures, maxRows) / 2 ** 20).toLocaleString('en-US')} MiB of inputs (at most 1,024 MiB): lower either`,
    );
  }
  const outFeatures = numberFlag('out-features', values['out-features'], 1024, {
    min: 1,
    max: 16_384,
    integer: true,
  });
  // Found here rather than by calibration's first call, which would fail the run (exit 1).
  const perCall = rowsPerCall(undefined, inFeatures, outFeatures);
  if (maxRows > perCall) {
    throw new UsageError(
      `--max-rows ${maxRows} is above the ${perCall} rows one native call takes at ${inFeatures} in, ${outFeatures} out`,
    );
  }
  // A share too small for a double is the least time there is, as --duration 1e-400 is: it
  // rounded to 0, and a window of 0 s made each phase's achieved rate 0 / 0 (NaN, JSON null).
  const phaseS = durationS / (rates.length * 2) || Number.MIN_VALUE;
  for (const rate of rates) if (!rate.relative) checkPhaseArrivals(rate.value, phaseS, `${rate.value}/s`);
  const backendFlag =
    values.backend === undefined
      ? undefined
      : choiceFlag('backend', values.backend, ['fixture', 'cuda', 'auto'] as const, 'fixture');
  const backend = backendFlag ?? (backendFromEnv(env) === undefined ? 'fixture' : undefined);
  return {
    durationS,
    phaseS,
    calibrateS: numberFlag('calibrate', values.calibrate, 1, { greater: 0, max: 3600 }),
    threads,
    requests,
    units,
    rates,
    backend,
    backendIsDefault: backendFlag === undefined && backend !== undefined,
    libraries: libraryFlags(values, backendFlag, env, 'fixture'),
    // The bound resolveDevice takes, so a device the runtime would refuse is a usage mistake here.
    device:
      values.device === undefined
        ? undefined
        : numberFlag('device', values.device, 0, { min: 0, max: MAX_DEVICE, integer: true }),
    outDir: outDirFlag(values.out),
    json: values.json === true,
    seed: numberFlag('seed', values.seed, 1, { min: 0, max: 2 ** 32 - 1, integer: true }),
    // Any length, as the runtime's deadlines take (long-timeout.ts).
    deadlineMs: deadlineFlag(values['deadline-ms']) ?? 1000,
    inFeatures,
    outFeatures,
    maxRows,
  };
}
