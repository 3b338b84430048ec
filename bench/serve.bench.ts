/**
 * Load on `serve` at and beyond capacity: autocannon against an in-process server on 127.0.0.1
 * (port 0), backed by the native CPU fixture. Each load runs for a fixed time with a fixed number
 * of connections (closed loop: each connection sends its next request when the last is answered).
 * Prints achieved rate, goodput, latency percentiles and the share answered 503, as Markdown, and
 * checks that every 503 was a runtime admission refusal (the count is exact, not sampled).
 *
 * Run: npm run bench:serve [-- --duration 5 --requests 4 --rows 4 --threads 1]
 * Loopback only; autocannon shares this process (and its event loop) with the server, so the
 * figures are the front's cost under load on this machine, not a network benchmark.
 */
import { createRequire } from 'node:module';
import { numberFlag, parseFlags, UsageError } from '../src/cli/args.js';
import { LinearRuntime } from '../src/index.js';
import { serve } from '../src/serve/index.js';
import { BenchHelp, benchUsage, orFlagUsageExit } from './lib/args.js';
import { statusShare } from './lib/status-share.js';

interface Percentiles {
  average: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

interface AutocannonResult {
  requests: { average: number; total: number };
  latency: Percentiles;
  duration: number;
  errors: number;
  timeouts: number;
  '2xx': number;
  non2xx: number;
  statusCodeStats: Record<string, { count: number }>;
}

type Autocannon = (options: {
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  body: Buffer;
  connections: number;
  duration: number;
  pipelining: number;
}) => Promise<AutocannonResult>;

// autocannon ships no types; this is the slice of its programmatic API used here.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const USAGE = benchUsage('serve.bench', ['--duration S', '--requests N', '--rows N', '--threads N']);
const [DURATION_S, REQUESTS, ROWS, THREADS] = orFlagUsageExit('serve.bench', USAGE, () => {
  const { values, positionals } = parseFlags('serve.bench', process.argv.slice(2), {
    duration: { type: 'string' },
    requests: { type: 'string' },
    rows: { type: 'string' },
    threads: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help === true) {
    throw new BenchHelp(USAGE);
  }
  if (positionals.length > 0) throw new UsageError(`takes flags only, got '${positionals[0]}'`);
  return [
    numberFlag('duration', values.duration, 5, { min: 1, max: 60, integer: true }),
    numberFlag('requests', values.requests, 4, { min: 1, max: 256, integer: true }),
    numberFlag('rows', values.rows, 4, { min: 1, max: 1024, integer: true }),
    numberFlag('threads', values.threads, 1, { min: 1, max: 16, integer: true }),
  ] as const;
});
const IN = 256;
const OUT = 256;

interface Row {
  load: string;
  connections: number;
  result: AutocannonResult;
  refusedByRuntime: number;
}

async function settle(lr: LinearRuntime): Promise<void> {
  // autocannon drops its connections at the end of a run; their work still ends on its own.
  for (let i = 0; i < 1000 && lr.report().depth > 0; i++) await new Promise((r) => setTimeout(r, 5));
}

async function main(): Promise<void> {
  const lr = await LinearRuntime.start({
    backend: 'fixture',
    threads: THREADS,
    inFeatures: IN,
    outFeatures: OUT,
    admission: { requests: REQUESTS },
  });
  const server = await serve(lr, { port: 0 });
  const body = Buffer.from(new Float32Array(ROWS * IN).fill(0.5).buffer);
  const run = (connections: number, duration: number) =>
    autocannon({
      url: `${server.address}/v1/linear`,
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body,
      connections,
      duration,
      pipelining: 1,
    });
  try {
    await run(REQUESTS, 1);
    await settle(lr);
    const rows: Row[] = [];
    for (const [load, connections] of [
      ['at capacity', REQUESTS],
      ['2x capacity', 2 * REQUESTS],
      ['4x capacity', 4 * REQUESTS],
    ] as const) {
      const before = lr.report().rejected;
      const result = await run(connections, DURATION_S);
      await settle(lr);
      rows.push({ load, connections, result, refusedByRuntime: lr.report().rejected - before });
    }
    print(rows);
  } finally {
    await server.close();
  }
}

function print(rows: readonly Row[]): void {
  const ms = (n: number): string => (n >= 10 ? n.toFixed(0) : n.toFixed(1));
  const lines = [
    `### serve: POST /v1/linear, ${benchLabel()}`,
    '',
    '| load | connections | responses | rate (req/s) | 200/s | 503 share | p50 ms | p90 ms | p99 ms | max ms | 503s = runtime refusals | errors |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |',
    ...rows.map(({ load, connections, result: r, refusedByRuntime }) => {
      const ok = r.statusCodeStats['200']?.count ?? 0;
      const refused = r.statusCodeStats['503']?.count ?? 0;
      const answered = Object.values(r.statusCodeStats).reduce((sum, s) => sum + s.count, 0);
      // Refusals the runtime counted can exceed the 503s autocannon heard: answers in flight
      // when a run stops are dropped with its connections.
      const exact = refused <= refusedByRuntime && refusedByRuntime - refused <= connections;
      return (
        `| ${load} | ${connections} | ${answered} | ${(answered / r.duration).toFixed(0)} | ${(ok / r.duration).toFixed(0)} | ` +
        `${statusShare(r.statusCodeStats, '503')} | ${ms(r.latency.p50)} | ${ms(r.latency.p90)} | ${ms(r.latency.p99)} | ${ms(r.latency.max)} | ` +
        `${exact ? 'yes' : 'NO'} (${refused} / ${refusedByRuntime}) | ${r.errors + r.timeouts} |`
      );
    }),
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

function benchLabel(): string {
  return (
    `fixture backend, ${IN} -> ${OUT} features, ${ROWS} rows per request, ` +
    `requests bound ${REQUESTS}, ${THREADS} thread(s), ${DURATION_S} s per load, loopback, Node ${process.versions.node}`
  );
}

await main();
