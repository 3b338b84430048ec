/**
 * What slow, numerous and non-reading clients cost `omni-runtime serve`: the server's resident
 * memory (VmRSS of its process) before and after N connections of one kind, and whether a
 * /health request on a fresh connection is still answered meanwhile. The figures in
 * docs/limits.md (HTTP) come from this. Kinds:
 *
 * - idle: one GET /health answered, then the kept-alive connection left idle;
 * - silent: connected, nothing sent;
 * - upload: a POST whose Content-Length is the body limit (65,536 rows of 32 floats), sent 4
 *   bytes short, then stalled ('answered' counts those the server answered: it held none of them);
 * - unread: a POST for a 4 MiB answer (4,096 rows of 256 floats), never read;
 * - json: one POST of 65,536 JSON rows of four zeros (640 KB), its answer read; the server's
 *   peak memory (sampled every 20 ms) and the answer's size and time ('connections' unused).
 *
 * Run: npm run bench:serve-clients [-- --kind idle --connections 2000]
 * The server runs as `node dist/src/cli.js serve` in a child process (the CPU fixture), so its
 * memory is its own; keep --connections under `ulimit -n` (each connection is a descriptor on
 * both sides). Loopback only: these are this machine's figures, not a network benchmark.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { choiceFlag, numberFlag, parseFlags, UsageError } from '../src/cli/args.js';
import { packageRoot } from '../src/paths.js';
import { BenchHelp, benchUsage, orFlagUsageExit } from './lib/args.js';

type Kind = 'idle' | 'silent' | 'upload' | 'unread' | 'json';

const USAGE = benchUsage('serve-clients', ['--kind idle|silent|upload|unread|json', '--connections N']);
const [kind, connections] = orFlagUsageExit('serve-clients', USAGE, () => {
  const { values, positionals } = parseFlags('serve-clients', process.argv.slice(2), {
    kind: { type: 'string' },
    connections: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help === true) {
    throw new BenchHelp(USAGE);
  }
  if (positionals.length > 0) throw new UsageError(`takes flags only, got '${positionals[0]}'`);
  return [
    choiceFlag<Kind>('kind', values.kind, ['idle', 'silent', 'upload', 'unread', 'json'], 'idle'),
    numberFlag('connections', values.connections, 2000, { min: 1, max: 60_000, integer: true }),
  ] as const;
});
const BODY_LIMIT = 8 * 1024 * 1024;
/** Rows of the 'json' request: as many as one call takes. */
const JSON_ROWS = 65_536;
/**
 * Input features: 4, but 32 for 'upload', whose body-limit upload must be rows one call takes
 * (65,536 of 32 floats): at 4 its Content-Length says 524,288 rows, which the server refuses
 * from its headers (413) and never holds.
 */
const IN = kind === 'upload' ? BODY_LIMIT / 4 / JSON_ROWS : 4;
const OUT = 256;
/** Rows of the 'unread' request: a 4 MiB answer. */
const UNREAD_ROWS = 4096;

const server = spawn(
  process.execPath,
  ['dist/src/cli.js', 'serve', '--port', '0', '--backend', 'fixture', '--in-features', String(IN)].concat([
    '--out-features',
    String(OUT),
    '--requests',
    '64',
  ]),
  { cwd: packageRoot, stdio: ['ignore', 'pipe', 'inherit'] },
);
const port = await new Promise<number>((resolve, reject) => {
  let out = '';
  server.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    const found = /listening on http:\/\/[^:]+:(\d+)/.exec(out);
    if (found) resolve(Number(found[1]));
  });
  server.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening`)));
});

const rssKiB = (): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))?.[1] ?? Number.NaN);

function open(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

const request = (headers: string, length: number): string =>
  `POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n${headers}` +
  `Content-Length: ${length}\r\n\r\n`;

/** Upload connections the server answered: it was not holding them, so the figure is not theirs. */
const answered = new Set<Socket>();

async function oneOf(kind: Kind): Promise<Socket> {
  const socket = await open();
  socket.on('error', () => {});
  if (kind === 'idle') {
    socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((resolve) => socket.once('data', resolve));
  } else if (kind === 'upload') {
    socket.write(request('', BODY_LIMIT));
    socket.write(Buffer.alloc(BODY_LIMIT - 4));
    // A stalled upload is never answered: one that is was refused, and holds nothing to measure.
    socket.once('data', () => answered.add(socket));
  } else if (kind === 'unread') {
    socket.pause();
    socket.write(request('', UNREAD_ROWS * IN * 4));
    socket.write(Buffer.alloc(UNREAD_ROWS * IN * 4));
  }
  return socket;
}

const health = async (): Promise<number> => (await fetch(`http://127.0.0.1:${port}/health`)).status;

await health();
const before = rssKiB();
if (kind === 'json') {
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssKiB());
  }, 20);
  const body = `{"rows":[${Array(JSON_ROWS).fill('[0,0,0,0]').join(',')}]}`;
  const started = performance.now();
  let done = false;
  const call = (async () => {
    const answer = await fetch(`http://127.0.0.1:${port}/v1/linear`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    // Counted as it comes: arrayBuffer() joins 338 MiB in one run of this process's main thread,
    // which held the /health polls below for ~1.3 s, a wait that was this client's, not the server's.
    let bytes = 0;
    for await (const chunk of answer.body ?? []) bytes += chunk.byteLength;
    done = true;
    return { status: answer.status, bytes };
  })();
  // /health on other connections, one after another, meanwhile: the longest any of them waited.
  let healthMaxMs = 0;
  while (!done) {
    const asked = performance.now();
    await health();
    healthMaxMs = Math.max(healthMaxMs, performance.now() - asked);
  }
  const answer = await call;
  const bytes = answer.bytes;
  clearInterval(sampler);
  console.log(
    JSON.stringify({
      kind,
      rows: JSON_ROWS,
      requestBytes: body.length,
      status: answer.status,
      answerMiB: +(bytes / 2 ** 20).toFixed(1),
      seconds: +((performance.now() - started) / 1000).toFixed(1),
      healthMaxSeconds: +(healthMaxMs / 1000).toFixed(2),
      rssBeforeMiB: +(before / 1024).toFixed(1),
      rssPeakMiB: +(peak / 1024).toFixed(1),
    }),
  );
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
  process.exit(0);
}
const sockets: Socket[] = [];
for (let i = 0; i < connections; i++) sockets.push(await oneOf(kind));
// What the server has yet to read or write settles: its memory is read once it stops moving.
let after = rssKiB();
for (let settled = 0; settled < 3; ) {
  await new Promise((resolve) => setTimeout(resolve, 500));
  const now = rssKiB();
  settled = Math.abs(now - after) < 1024 ? settled + 1 : 0;
  after = now;
}
const status = await health();
console.log(
  JSON.stringify({
    kind,
    connections,
    rssBeforeMiB: +(before / 1024).toFixed(1),
    rssAfterMiB: +(after / 1024).toFixed(1),
    perConnectionKiB: +((after - before) / connections).toFixed(1),
    healthMeanwhile: status,
    ...(kind === 'upload' ? { answered: answered.size } : {}),
  }),
);
for (const socket of sockets) socket.destroy();
server.kill('SIGTERM');
await new Promise((resolve) => server.once('exit', resolve));
