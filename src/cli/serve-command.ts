/**
 * `omni-runtime serve`: start a LinearRuntime on the chosen backend, put it behind HTTP
 * (src/serve), print where it listens, and on SIGTERM or SIGINT drain and exit. A signal that
 * comes while the runtime starts stops it once the runtime is up, without ever listening. A
 * runtime that fails (it never recovers) is drained the same way, after one line on stderr.
 *
 * Exit status: 0 after a clean drain; 1 when the drain timeout abandoned work (or a second
 * signal cut the wait short, or the runtime's close cut off a call whose reply did not come
 * within startTimeoutMs), and whenever the runtime failed. Usage mistakes throw
 * UsageError (one line, exit 2); a runtime or listener that cannot start throws its coded
 * error (one line, exit 1).
 */

import { MAX_CLAIM_SLOTS } from '../admission/layout.js';
import { LinearRuntime } from '../linear/linear-runtime.js';
import type { LinearRuntimeOptions, NativeLibraryPaths } from '../linear/start-options.js';
import { MAX_DEVICE } from '../native/device.js';
import { type BackendPreference, MAX_FEATURES } from '../native/index.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../serve/request-timeout.js';
import { DEFAULT_SEND_TIMEOUT_MS } from '../serve/send-timeout.js';
import { DEFAULT_BODY_LIMIT, DEFAULT_DRAIN_TIMEOUT_MS } from '../serve/serve-options.js';
import type { Served } from '../serve/served.js';
import { serve } from '../serve/server.js';
import {
  checkBoundFlags,
  choiceFlag,
  deadlineFlag,
  libraryFlags,
  numberFlag,
  parseFlags,
  UsageError,
} from './args.js';
import { failureLine, reportsFailed, watchFailure } from './failure-watch.js';
import { ShutdownSignals, type SignalSource } from './shutdown-signals.js';

export const SERVE_HELP = `Usage: omni-runtime serve [flags]

Serves the built-in native worker (y = GELU(x W^T + b)) over HTTP, on loopback by default:
  POST /v1/linear   float32 LE rows (application/octet-stream; rows from ?rows=, the
                    x-omni-rows header, or the body length) or JSON { "rows": [[...]] };
                    answered in the same encoding. Cost = rows.
  GET  /health      { state, depth, capacity, ... }: 200 when ready, 503 otherwise
  GET  /metrics     Prometheus text
Full capacity answers 503 with Retry-After at once; a cost that can never fit and a body over
the limit 413; a malformed body 400; a call past its deadline 504; a native error 500; another
method on one of these paths 405 (with Allow), an unknown path 404.
SIGTERM or SIGINT drains: no new connections; on those already open, POST /v1/linear and
GET /health answer 503 (/metrics still 200; 404 and 405 as above); in-flight work finishes
(up to --drain-timeout-ms), then the runtime closes and the process exits 0 (1 if the
timeout or a second signal cut work off). A signal while the runtime starts stops it as
soon as the runtime is up, without listening (exit 0; 1 if the runtime had failed by then).
A runtime that fails (a sticky native error, a lost thread that cannot be replaced) never
recovers: the server says so on stderr, drains the same way and exits 1.

Flags:
  --host ADDR            interface to listen on (default 127.0.0.1)
  --port N               port (default 8080; 0 picks a free one, printed on start)
  --threads N            worker threads (default 1)
  --requests N           outstanding request bound (default 4 x threads)
  --units N              outstanding unit (row) ceiling (default: none)
  --backend B            fixture | cuda | auto (default: OMNI_BACKEND if set, else auto)
  --cuda-library PATH    load this CUDA library (e.g. built for your GPUs) instead of the package's
  --fixture-library PATH load this CPU fixture library instead of the package's
  --device N             CUDA device (default: OMNI_CUDA_DEVICE if set, else 0)
  --body-limit BYTES     largest request body (default ${DEFAULT_BODY_LIMIT})
  --deadline-ms MS       every call's deadline (default: none; x-omni-deadline-ms may shorten it)
  --in-features N        layer input width (default 256)
  --out-features N       layer output width (default 256)
  --drain-timeout-ms MS  how long a drain waits for in-flight work (default ${DEFAULT_DRAIN_TIMEOUT_MS}; 0: it
                         abandons that work at once)
  --request-timeout-ms MS
                         how long a request may take to arrive, headers and body (default
                         ${DEFAULT_REQUEST_TIMEOUT_MS}; headers: at most 60000); later: 408, connection closed;
                         over 2147483647 (node's limit): none
  --send-timeout-ms MS   how long an answer may take to leave (default ${DEFAULT_SEND_TIMEOUT_MS}); a client
                         that has not read it by then has its connection closed
  --retry-after S        Retry-After seconds on a capacity 503 (default 1)
  -h, --help             this help
Every MS takes any finite number > 0 (--drain-timeout-ms also 0), of any length; one too small
for a double (1e-400) is the shortest time there is, not 0.
Exit status: 0 after a clean drain; 2 for a usage mistake; 1 for any other end: work cut off by
the drain timeout or a second signal, a runtime that failed, or one that could not start (a
library that will not load, a port in use). A runtime that failed or could not start is one
line on stderr; the server's log (listening, draining, how the drain ended) goes to stdout.
`;

export interface ServeConfig {
  readonly host: string;
  readonly port: number;
  readonly threads: number;
  readonly requests: number;
  readonly units: number | undefined;
  readonly backend: BackendPreference | undefined;
  readonly libraries: NativeLibraryPaths;
  /** undefined: the runtime's own choice (OMNI_CUDA_DEVICE, else 0). */
  readonly device: number | undefined;
  readonly bodyLimit: number;
  readonly deadlineMs: number | undefined;
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly drainTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly sendTimeoutMs: number;
  readonly retryAfterSeconds: number;
}

/** What the command needs from outside; tests swap the runtime (a gated fixture) and streams. */
export interface ServeCommandDeps {
  readonly startRuntime?: (options: LinearRuntimeOptions) => Promise<
    Served & {
      /** Named in the start line, as is the reason for it. */
      backend: LinearRuntime['backend'];
      backendReason?: string;
      libraryPath?: string | null;
      /**
       * A LinearRuntime's Runtime: the error that failed it, for the line on stderr, and
       * whenFailed() to be told of it (without it, the state is polled: see failure-watch).
       */
      runtime?: { readonly failure?: Error | undefined; whenFailed?: () => Promise<unknown> };
    }
  >;
  readonly out?: (line: string) => void;
  /** Where the failure line goes (default stderr). */
  readonly err?: (line: string) => void;
  readonly signals?: SignalSource;
  /** Listeners already installed (the CLI installs them before loading this module); kept, not disposed. */
  readonly listening?: ShutdownSignals;
  /**
   * Called once the command's output becomes a log (not for --help): from then on a line that
   * cannot be written must not end the process (the CLI's stdout 'error' handler asks).
   */
  readonly logging?: () => void;
}

const FLAGS = {
  host: { type: 'string' },
  port: { type: 'string' },
  threads: { type: 'string' },
  requests: { type: 'string' },
  units: { type: 'string' },
  backend: { type: 'string' },
  'cuda-library': { type: 'string' },
  'fixture-library': { type: 'string' },
  device: { type: 'string' },
  'body-limit': { type: 'string' },
  'deadline-ms': { type: 'string' },
  'in-features': { type: 'string' },
  'out-features': { type: 'string' },
  'drain-timeout-ms': { type: 'string' },
  'request-timeout-ms': { type: 'string' },
  'send-timeout-ms': { type: 'string' },
  'retry-after': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const optional = (name: string, raw: string | undefined, options: Parameters<typeof numberFlag>[3]) =>
  raw === undefined ? undefined : numberFlag(name, raw, 0, options);

/** Parses the flags; 'help' for --help. Throws UsageError. */
export function parseServeArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): ServeConfig | 'help' {
  const { values, positionals } = parseFlags('serve', argv, FLAGS);
  if (values.help === true) return 'help';
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`, 'serve');
  // Trimmed, as the number flags are: no host name holds a space, and getaddrinfo's refusal of
  // ' 127.0.0.1' printed (whitespace folded) as "ENOTFOUND 127.0.0.1".
  const host = (values.host ?? '127.0.0.1').trim();
  if (host === '') throw new UsageError('--host must not be empty');
  const threads = numberFlag('threads', values.threads, 1, { min: 1, max: 256, integer: true });
  const requests = numberFlag('requests', values.requests, Math.min(4 * threads, MAX_CLAIM_SLOTS), {
    min: 1,
    max: MAX_CLAIM_SLOTS,
    integer: true,
  });
  const units = optional('units', values.units, { min: 1, max: Number.MAX_SAFE_INTEGER, integer: true });
  checkBoundFlags(requests, units);
  const backend =
    values.backend === undefined
      ? undefined
      : choiceFlag<BackendPreference>('backend', values.backend, ['fixture', 'cuda', 'auto'], 'auto');
  return {
    host,
    port: numberFlag('port', values.port, 8080, { min: 0, max: 65535, integer: true }),
    threads,
    requests,
    units,
    backend,
    libraries: libraryFlags(values, backend, env),
    // The bound resolveDevice takes, so a device the runtime would refuse is a usage mistake here.
    device: optional('device', values.device, { min: 0, max: MAX_DEVICE, integer: true }),
    bodyLimit: numberFlag('body-limit', values['body-limit'], DEFAULT_BODY_LIMIT, {
      min: 1,
      max: 2 ** 31 - 1,
      integer: true,
    }),
    // Above 0, read as bench's --deadline-ms and x-omni-deadline-ms are (1e-400: the shortest). The
    // times take any length, as the library does (long-timeout.ts): a cap at one setTimeout's
    // 2^31 - 1 ms refused a month-long deadline or drain the server would have honoured.
    deadlineMs: deadlineFlag(values['deadline-ms']),
    inFeatures: numberFlag('in-features', values['in-features'], 256, {
      min: 1,
      max: MAX_FEATURES,
      integer: true,
    }),
    outFeatures: numberFlag('out-features', values['out-features'], 256, {
      min: 1,
      max: MAX_FEATURES,
      integer: true,
    }),
    // 0 abandons in-flight work at once, as serve()'s drainTimeoutMs and Runtime.close take it.
    drainTimeoutMs: numberFlag('drain-timeout-ms', values['drain-timeout-ms'], DEFAULT_DRAIN_TIMEOUT_MS, {
      min: 0,
    }),
    requestTimeoutMs: numberFlag(
      'request-timeout-ms',
      values['request-timeout-ms'],
      DEFAULT_REQUEST_TIMEOUT_MS,
      { greater: 0 },
    ),
    sendTimeoutMs: numberFlag('send-timeout-ms', values['send-timeout-ms'], DEFAULT_SEND_TIMEOUT_MS, {
      greater: 0,
    }),
    retryAfterSeconds: numberFlag('retry-after', values['retry-after'], 1, {
      min: 0,
      max: 86_400,
      integer: true,
    }),
  };
}

/** Runs `omni-runtime serve`; resolves with the exit code once the server has drained. */
export async function runServeCommand(argv: string[], deps: ServeCommandDeps = {}): Promise<number> {
  const config = parseServeArgs(argv);
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  if (config === 'help') {
    out(SERVE_HELP.trimEnd());
    return 0;
  }
  deps.logging?.();
  // Listen for signals from the start: a SIGTERM while the runtime starts stops it, not kills.
  const signals = deps.listening ?? new ShutdownSignals(deps.signals ?? process);
  try {
    return await serveUntilSignalled(config, deps, signals, out);
  } finally {
    if (signals !== deps.listening) signals.dispose();
  }
}

async function serveUntilSignalled(
  config: ServeConfig,
  deps: ServeCommandDeps,
  signals: ShutdownSignals,
  out: (line: string) => void,
): Promise<number> {
  const start = deps.startRuntime ?? ((options: LinearRuntimeOptions) => LinearRuntime.start(options));
  const runtime = await start({
    threads: config.threads,
    inFeatures: config.inFeatures,
    outFeatures: config.outFeatures,
    admission: {
      requests: config.requests,
      ...(config.units === undefined ? {} : { units: config.units }),
    },
    ...(config.backend === undefined ? {} : { backend: config.backend }),
    libraries: config.libraries,
    ...(config.device === undefined ? {} : { device: config.device }),
    ...(config.deadlineMs === undefined ? {} : { deadlineMs: config.deadlineMs }),
  });
  const err = deps.err ?? ((line: string) => process.stderr.write(`${line}\n`));
  const early = signals.received;
  if (early !== undefined) {
    // Signalled while starting: never listen, so no client is accepted only to be drained.
    out(`omni-runtime serve: ${early} while starting: stopping`);
    // Read before the close: a runtime without a Runtime under it says so only in its state,
    // which the close moves on ('stopped'), as the watch would have read it after listening.
    const reported = reportsFailed(runtime);
    const closed = await runtime.close({ timeoutMs: config.drainTimeoutMs });
    // A failed runtime closes clean (nothing is outstanding), but the stop did not go well.
    const failure = runtime.runtime?.failure;
    const failed = reported || failure !== undefined;
    if (failed) err(failureLine(failure));
    return closed.clean && !failed ? 0 : 1;
  }
  let handle: Awaited<ReturnType<typeof serve>>;
  try {
    handle = await serve(runtime, {
      host: config.host,
      port: config.port,
      bodyLimit: config.bodyLimit,
      drainTimeoutMs: config.drainTimeoutMs,
      requestTimeoutMs: config.requestTimeoutMs,
      sendTimeoutMs: config.sendTimeoutMs,
      retryAfterSeconds: config.retryAfterSeconds,
      ...(config.deadlineMs === undefined ? {} : { deadlineMs: config.deadlineMs }),
    });
  } catch (err) {
    await runtime.close({ timeoutMs: config.drainTimeoutMs });
    throw err;
  }
  const units = config.units === undefined ? 'none' : String(config.units);
  out(
    `omni-runtime serve: listening on ${handle.address} (backend ${runtime.backend}: ${runtime.backendReason ?? 'given'}; ` +
      (runtime.libraryPath ? `library ${runtime.libraryPath}; ` : '') +
      `threads ${config.threads}, requests ${config.requests}, units ${units}, ` +
      `${runtime.inFeatures} -> ${runtime.outFeatures} features)`,
  );

  const watch = watchFailure(runtime);
  // undefined: the runtime failed before any signal came.
  const signal = await Promise.race([signals.first, watch.failed.then(() => undefined)]);
  watch.stop();
  // drain() stops listening before it returns: once this line is out, connections are refused.
  const drained = handle.drain();
  if (signal === undefined) err(failureLine(runtime.runtime?.failure));
  out(`omni-runtime serve: ${signal ?? 'runtime failed'}: draining (up to ${config.drainTimeoutMs} ms)`);
  // A second signal stops waiting for in-flight requests (they are abandoned); during the
  // drain of a failed runtime a signal is the first, and asks only for what is under way.
  signals.onAgain((again) => {
    out(`omni-runtime serve: ${again} again: abandoning in-flight requests`);
    handle.expireDrain();
  });
  const result = await drained;
  // A runtime that fails during a signal's drain (a sticky native error in a call the drain
  // waited for) stays 'draining', but keeps the error: a stop that broke it is not clean.
  const failedLate = signal !== undefined && runtime.runtime?.failure !== undefined;
  if (failedLate) err(failureLine(runtime.runtime?.failure));
  out(
    result.clean
      ? 'omni-runtime serve: drained, exiting'
      : `omni-runtime serve: drain not clean (${abandoned(result.abandonedRequests)}), exiting`,
  );
  return result.clean && signal !== undefined && !failedLate ? 0 : 1;
}

function abandoned(count: number): string {
  return `${count} ${count === 1 ? 'request' : 'requests'} abandoned`;
}
