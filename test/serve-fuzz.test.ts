/**
 * Randomized traffic over raw sockets against one server: mostly legal requests of every route,
 * odd methods, paths, headers and framings, bodies around the size limit, pipelining, and
 * clients that send in pieces, half-close, reset mid-body or leave before their answer. Checks
 * that every answer is well-formed HTTP in order, that error answers carry a documented code
 * with its status, and that once every socket is closed nothing is left in flight and a drain
 * is clean. A fixed seed and run count (printed) make a failure reproducible.
 */
import { connect, type Socket } from 'node:net';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServeHandle, serve } from '../src/serve/index.js';
import { statusFor } from '../src/serve/status.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { pipelinedExchange } from './fixtures/serve-client.js';
import { GATE } from './fixtures/serve-gate-layout.js';
import { type Gated, startGated } from './fixtures/serve-harness.js';

const IN = 4;
const OUT = 3;
const BODY_LIMIT = 256; // 16 rows of 4 floats
const UNITS = 8;
const SEED = Number(process.env.SERVE_FUZZ_SEED ?? 20261201);
const RUNS = Number(process.env.SERVE_FUZZ_RUNS ?? 150);

interface Req {
  readonly kind: string;
  readonly method: string;
  readonly bytes: Buffer;
  /** Statuses a correct server may answer with. */
  readonly allowed: readonly number[];
  /** The request breaks HTTP framing: the server answers 400 (or nothing) and closes. */
  readonly breaks: boolean;
}

type Behaviour = 'whole' | 'pieces' | 'half-close' | 'reset-mid' | 'leave';

interface Conn {
  readonly reqs: Req[];
  readonly behaviour: Behaviour;
  readonly pieces: number[];
  readonly cut: number;
}

const floats = (values: number[]): Buffer => Buffer.from(new Float32Array(values).buffer);

function head(method: string, path: string, headers: [string, string][]): string {
  return `${method} ${path} HTTP/1.1\r\nHost: x\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
}

function chunked(body: Buffer, pieces: number): Buffer {
  const parts: Buffer[] = [];
  const step = Math.max(1, Math.ceil(body.length / pieces));
  for (let i = 0; i < body.length; i += step) {
    const c = body.subarray(i, i + step);
    parts.push(Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

// ---- bodies of POST /v1/linear ---------------------------------------------------------------

interface Body {
  readonly kind: string;
  readonly type: string | undefined;
  readonly body: Buffer;
  readonly allowed: readonly number[];
  readonly query?: string;
  readonly extra?: [string, string][];
}

const smallFloat = fc.integer({ min: -1000, max: 1000 }).map((n) => n / 8);
const rowsOf = (n: number) =>
  fc.array(fc.array(smallFloat, { minLength: IN, maxLength: IN }), { minLength: n, maxLength: n });

const jsonType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'Application/JSON;charset="UTF-8"',
  'application/json ; charset=utf8',
);
const octetType = fc.constantFrom(
  'application/octet-stream',
  'APPLICATION/OCTET-STREAM',
  'application/octet-stream; charset=latin1',
  'application/octet-stream;x=1',
);

const bodyArb: fc.Arbitrary<Body> = fc.oneof(
  // valid octet rows, fitting the unit bound
  fc
    .tuple(fc.integer({ min: 1, max: UNITS }), octetType, fc.constantFrom('none', 'query', 'header'))
    .chain(([n, type, hint]) =>
      rowsOf(n).map((rows) => ({
        kind: 'octet-ok',
        type,
        body: floats(rows.flat()),
        allowed: [200, 503],
        ...(hint === 'query' ? { query: `?rows=${n}` } : {}),
        ...(hint === 'header' ? { extra: [['x-omni-rows', String(n)]] as [string, string][] } : {}),
      })),
    ),
  // valid JSON rows
  fc.tuple(fc.integer({ min: 1, max: UNITS }), jsonType).chain(([n, type]) =>
    rowsOf(n).map((rows) => {
      const body = Buffer.from(JSON.stringify({ rows }));
      return { kind: 'json-ok', type, body, allowed: body.length > BODY_LIMIT ? [413] : [200, 503] };
    }),
  ),
  // more rows than the unit ceiling, body within the limit: never fits
  fc.integer({ min: UNITS + 1, max: BODY_LIMIT / (4 * IN) }).map((n) => ({
    kind: 'octet-too-many-rows',
    type: 'application/octet-stream',
    body: floats(new Array(n * IN).fill(1)),
    allowed: [413],
  })),
  // bodies around the limit
  fc.integer({ min: BODY_LIMIT - 8, max: BODY_LIMIT + 8 }).map((len) => ({
    kind: len > BODY_LIMIT ? 'octet-over-limit' : 'octet-near-limit',
    type: 'application/octet-stream',
    body: Buffer.alloc(len, 0),
    allowed: len > BODY_LIMIT ? [413] : [400, 413],
  })),
  fc.integer({ min: BODY_LIMIT - 8, max: BODY_LIMIT + 8 }).map((len) => {
    const text = `{"rows":[[1,2,3,4]]${' '.repeat(Math.max(0, len - 20))}}`;
    return {
      kind: Buffer.byteLength(text) > BODY_LIMIT ? 'json-over-limit' : 'json-near-limit',
      type: 'application/json',
      body: Buffer.from(text),
      allowed: Buffer.byteLength(text) > BODY_LIMIT ? [413] : [200, 503],
    };
  }),
  // wrong JSON
  fc
    .constantFrom(
      '',
      '{',
      'null',
      '[]',
      '1',
      '"rows"',
      '{"rows":[]}',
      '{"rows":[[1,2,3]]}',
      '{"rows":[[1,2,3,"4"]]}',
      '{"rows":[[1,2,3,NaN]]}',
      '{"rows":[[1,2,3,1e39]]}',
      '{"rows":[[1,2,3,1e999]]}',
      '{"rows":[[1,2,3,null]]}',
      '{"rows":{"0":[1,2,3,4]}}',
      '{"__proto__":{"rows":[[1,2,3,4]]}}',
      '{"rows":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}',
      `${'['.repeat(60)}${']'.repeat(60)}`,
      '{"rows":[[1,2,3,4]]}x',
    )
    .map((text) => ({
      kind: 'json-wrong',
      type: 'application/json',
      body: Buffer.from(text),
      allowed: [400],
    })),
  // wrong octets: a partial float, a partial row, empty
  fc.constantFrom(0, 3, 5, 8, 12).map((len) => ({
    kind: 'octet-wrong',
    type: 'application/octet-stream',
    body: Buffer.alloc(len, 1),
    allowed: [400],
  })),
  // rows hints that are malformed or disagree
  fc.constantFrom('?rows=0', '?rows=abc', '?rows=2', '?rows=1&rows=1', '?rows=%31').map((query) => ({
    kind: `octet-hint ${query}`,
    type: 'application/octet-stream',
    body: floats([1, 2, 3, 4]),
    query,
    allowed: query === '?rows=%31' ? [200, 503] : [400],
  })),
  // other media types, compressed, JSON in another charset, no type
  fc
    .constantFrom(
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/json; charset=utf-16',
      'application/jsonx',
      'multipart/form-data; boundary=x',
      undefined,
    )
    .map((type) => ({
      kind: `type ${type}`,
      type,
      body: Buffer.from('{"rows":[[1,2,3,4]]}'),
      allowed: [415],
    })),
  fc.constant({
    kind: 'gzip',
    type: 'application/octet-stream',
    body: floats([1, 2, 3, 4]),
    extra: [['content-encoding', 'gzip']] as [string, string][],
    allowed: [415],
  }),
  // client deadlines
  fc.constantFrom('1000', '0', '-1', 'abc', '1e3', '99999999999999999999999999').map((d) => ({
    kind: `deadline ${d}`,
    type: 'application/octet-stream',
    body: floats([1, 2, 3, 4]),
    extra: [['x-omni-deadline-ms', d]] as [string, string][],
    allowed: ['0', '-1', 'abc'].includes(d) ? [400] : [200, 503, 504],
  })),
);

// ---- requests -------------------------------------------------------------------------------

const connectionHeader = fc.constantFrom<[string, string][]>(
  [],
  [],
  [['Connection', 'keep-alive']],
  [['connection', 'Keep-Alive']],
);

const linearArb: fc.Arbitrary<Req> = fc
  .record({
    body: bodyArb,
    framing: fc.constantFrom('cl', 'cl', 'cl', 'chunked'),
    chunkPieces: fc.integer({ min: 1, max: 5 }),
    expect: fc.boolean(),
    conn: connectionHeader,
    dupType: fc.boolean(),
  })
  .map(({ body, framing, chunkPieces, expect, conn, dupType }) => {
    const headers: [string, string][] = [...conn, ...(body.extra ?? [])];
    if (body.type !== undefined) {
      headers.push(['Content-Type', body.type]);
      // A second, identical Content-Type: node joins duplicates of this header by keeping the first.
      if (dupType) headers.push(['Content-Type', body.type]);
    }
    if (expect) headers.push(['Expect', '100-continue']);
    let payload = body.body;
    if (framing === 'chunked' && body.body.length > 0) {
      headers.push(['Transfer-Encoding', 'chunked']);
      payload = chunked(body.body, chunkPieces);
    } else {
      headers.push(['Content-Length', String(body.body.length)]);
    }
    const bytes = Buffer.concat([
      Buffer.from(head('POST', `/v1/linear${body.query ?? ''}`, headers)),
      payload,
    ]);
    return { kind: `linear ${body.kind}`, method: 'POST', bytes, allowed: body.allowed, breaks: false };
  });

const getArb: fc.Arbitrary<Req> = fc
  .record({
    method: fc.constantFrom('GET', 'HEAD'),
    path: fc.constantFrom(
      '/health',
      '/metrics',
      '/health?x=1',
      '/metrics?name[]=1&%zz',
      '/v1/linear',
      '/nowhere',
      '//health',
      '/health/',
      '/HEALTH',
      '/%68ealth',
      '/v1/linear/..',
      '/a%00b',
      `/${'x'.repeat(3000)}`,
      '/health#frag',
      '/%E2%82%AC',
      '/%',
      '/%zz',
      '/health?%',
    ),
    conn: connectionHeader,
  })
  .map(({ method, path, conn }) => {
    // %68 is 'h': percent-encoded unreserved characters name the same path (RFC 3986 6.2.2.2).
    const known = ['/health', '/metrics', '/%68ealth'].includes(path.split(/[?#]/)[0] as string);
    const allowed = path === '/%' || path === '/%zz' ? [400] : known ? [200, 503] : [404];
    return {
      kind: `${method} ${path.slice(0, 20)}`,
      method,
      bytes: Buffer.from(head(method, path, conn)),
      allowed,
      breaks: false,
    };
  });

/** Methods with a body on routes that have no such method: 404, or the body's own refusal. */
const otherMethodArb: fc.Arbitrary<Req> = fc
  .record({
    method: fc.constantFrom('PUT', 'DELETE', 'OPTIONS', 'POST', 'PATCH'),
    path: fc.constantFrom('/health', '/metrics', '/v1/linear', '/nope'),
    type: fc.constantFrom('application/json', 'application/octet-stream', 'text/plain', undefined),
    len: fc.constantFrom(0, 4, 16, BODY_LIMIT + 1),
  })
  .filter(({ method, path }) => !(method === 'POST' && path === '/v1/linear'))
  .map(({ method, path, type, len }) => {
    const headers: [string, string][] = [];
    if (type !== undefined) headers.push(['Content-Type', type]);
    headers.push(['Content-Length', String(len)]);
    const body = type === 'application/json' && len >= 2 ? `{}${' '.repeat(len - 2)}` : 'a'.repeat(len);
    return {
      kind: `${method} ${path} ${type} ${len}`,
      method,
      bytes: Buffer.from(head(method, path, headers) + body),
      allowed: [400, 404, 413, 415],
      breaks: false,
    };
  });

/** Requests node:http refuses to parse: answered 400 (or 431) and the connection closed. */
const brokenArb: fc.Arbitrary<Req> = fc
  .constantFrom(
    'get /health HTTP/1.1\r\nHost: x\r\n\r\n',
    'FOO /health HTTP/1.1\r\nHost: x\r\n\r\n',
    'GET /health HTTP/9.9\r\nHost: x\r\n\r\n',
    'GET /health\r\n\r\n',
    'GET /health HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n',
    'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 16\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n',
    'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 16\r\nContent-Length: 8\r\n\r\n0123456789abcdef',
    'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: -1\r\n\r\n',
    'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    `GET /${'y'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
  )
  .map((text) => ({
    kind: `broken ${text.slice(0, 30).replace(/\r\n/g, ' ')}`,
    method: text.split(' ')[0] as string,
    bytes: Buffer.from(text),
    // llhttp reads a request line without a version as HTTP/0.9: answered, then closed.
    allowed: text.startsWith('GET /health\r\n') ? [200] : [400, 431],
    breaks: true,
  }));

const closeArb: fc.Arbitrary<Req> = fc.constantFrom('/health', '/metrics', '/nope').map((path) => ({
  kind: `close ${path}`,
  method: 'GET',
  bytes: Buffer.from(head('GET', path, [['Connection', 'close']])),
  allowed: path === '/nope' ? [404] : [200, 503],
  breaks: true, // the server answers it and closes: nothing after it is answered
}));

/** A tunnel request: this server is no proxy, so 501, and the connection closed. */
const connectArb: fc.Arbitrary<Req> = fc
  .constantFrom('example.com:443', '127.0.0.1:1', '[::1]:80')
  .map((authority) => ({
    kind: `CONNECT ${authority}`,
    method: 'CONNECT',
    bytes: Buffer.from(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`),
    allowed: [501],
    breaks: true,
  }));

/** How a request is shown in a counterexample: its kind and its bytes as text, shortened. */
function shown(req: Req): Req {
  const text = req.bytes.toString('latin1');
  const short = text.length > 400 ? `${text.slice(0, 300)}...(${text.length})...${text.slice(-60)}` : text;
  return Object.assign(req, { [fc.toStringMethod]: () => `${req.kind}: ${JSON.stringify(short)}` });
}

/** HTTP/1.1 without Host: a 400 in JSON, the connection kept (nothing unread). */
const noHostArb: fc.Arbitrary<Req> = fc.constantFrom('/health', '/nope').map((path) => ({
  kind: `no host ${path}`,
  method: 'GET',
  bytes: Buffer.from(`GET ${path} HTTP/1.1\r\n\r\n`),
  allowed: [400],
  breaks: false,
}));

const reqArb: fc.Arbitrary<Req> = fc
  .oneof(
    { weight: 8, arbitrary: linearArb },
    { weight: 3, arbitrary: getArb },
    { weight: 2, arbitrary: otherMethodArb },
    { weight: 1, arbitrary: brokenArb },
    { weight: 1, arbitrary: closeArb },
    { weight: 1, arbitrary: noHostArb },
    { weight: 1, arbitrary: connectArb },
  )
  .map(shown);

const connArb: fc.Arbitrary<Conn> = fc.record({
  reqs: fc.array(reqArb, { minLength: 1, maxLength: 4 }),
  behaviour: fc.constantFrom<Behaviour>('whole', 'whole', 'pieces', 'half-close', 'reset-mid', 'leave'),
  pieces: fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 8 }),
  cut: fc.double({ min: 0, max: 1, noNaN: true }),
});

// ---- the client side: parse answers and check them -----------------------------------------

interface Parsed {
  status: number;
  headers: Map<string, string[]>;
  body: Buffer;
}

class Malformed extends Error {}

/** Parses one answer at the start of `buf`; undefined when incomplete. Throws Malformed. */
function parseOne(buf: Buffer, method: string, atEnd: boolean): { answer: Parsed; used: number } | undefined {
  const split = buf.indexOf('\r\n\r\n');
  if (split < 0) {
    if (buf.length > 64 * 1024) throw new Malformed('no end of head');
    return undefined;
  }
  const lines = buf.subarray(0, split).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.1 (\d{3}) [^\r\n]*$/.exec(lines[0] ?? '');
  if (!m) throw new Malformed(`bad status line ${JSON.stringify(lines[0])}`);
  const status = Number(m[1]);
  const headers = new Map<string, string[]>();
  for (const line of lines.slice(1)) {
    const hm = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+): ?(.*)$/.exec(line);
    if (!hm) throw new Malformed(`bad header line ${JSON.stringify(line)}`);
    const name = (hm[1] as string).toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), hm[2] as string]);
  }
  let offset = split + 4;
  const noBody = status < 200 || status === 204 || status === 304 || method === 'HEAD';
  const te = headers.get('transfer-encoding');
  const cl = headers.get('content-length');
  if (cl && cl.length > 1) throw new Malformed('several Content-Length');
  if (te && cl) throw new Malformed('both Transfer-Encoding and Content-Length');
  if (noBody) return { answer: { status, headers, body: Buffer.alloc(0) }, used: offset };
  if (te) {
    if (te.join(',').toLowerCase() !== 'chunked') throw new Malformed(`te ${te}`);
    const parts: Buffer[] = [];
    for (;;) {
      const eol = buf.indexOf('\r\n', offset);
      if (eol < 0) return undefined;
      const size = Number.parseInt(buf.subarray(offset, eol).toString('latin1'), 16);
      if (!Number.isInteger(size)) throw new Malformed('bad chunk size');
      if (buf.length < eol + 2 + size + 2) return undefined;
      parts.push(buf.subarray(eol + 2, eol + 2 + size));
      offset = eol + 2 + size + 2;
      if (size === 0) break;
    }
    return { answer: { status, headers, body: Buffer.concat(parts) }, used: offset };
  }
  if (cl) {
    const n = Number(cl[0]);
    if (!Number.isSafeInteger(n) || n < 0) throw new Malformed('bad content-length');
    if (buf.length < offset + n) return undefined;
    return { answer: { status, headers, body: buf.subarray(offset, offset + n) }, used: offset + n };
  }
  // Delimited by close.
  if (!atEnd) return undefined;
  return { answer: { status, headers, body: buf.subarray(offset) }, used: buf.length };
}

interface Outcome {
  readonly finals: Parsed[];
  readonly interims: number;
  readonly closedByServer: boolean;
  /** The server reset the connection (it closed while this client still sent). */
  readonly reset?: boolean;
}

function problemsOf(answer: Parsed, req: Req): string[] {
  const problems: string[] = [];
  if (!req.allowed.includes(answer.status)) {
    problems.push(`status ${answer.status} not in ${req.allowed.join('/')}`);
  }
  if (answer.status >= 400 && req.method !== 'HEAD') {
    const type = answer.headers.get('content-type')?.[0] ?? '';
    if (!type.startsWith('application/json')) problems.push(`error answer of type ${type}`);
    else {
      let body: { code?: unknown; message?: unknown; reason?: unknown } | undefined;
      try {
        body = JSON.parse(answer.body.toString('utf8'));
      } catch {
        problems.push(`error body not JSON: ${answer.body.toString('utf8').slice(0, 80)}`);
      }
      if (body && answer.status !== 503) {
        // /health's 503 is its report; every other error answer is { code, message }.
        if (typeof body.code !== 'string' || !body.code.startsWith('OMNI_ERR_'))
          problems.push(`error body without code: ${JSON.stringify(body)}`);
        else if (typeof body.message !== 'string') problems.push('error body without message');
        else {
          const expected =
            body.code === 'OMNI_ERR_INTERNAL' ? 500 : statusFor(body.code, body.reason as string | undefined);
          if (expected !== answer.status) problems.push(`${body.code} answered ${answer.status}`);
        }
      }
    }
    if (
      answer.status === 503 &&
      answer.headers.get('content-type')?.[0]?.startsWith('application/json') !== true
    )
      problems.push('503 without JSON');
  }
  return problems;
}

async function exchange(port: number, conn: Conn): Promise<Outcome> {
  const socket: Socket = connect({ host: '127.0.0.1', port });
  let reset = false;
  socket.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE') reset = true;
  });
  const all = Buffer.concat(conn.reqs.map((r) => r.bytes));
  let buf = Buffer.alloc(0);
  let closed = false;
  const closedP = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closed = true;
      resolve();
    }),
  );
  socket.on('data', (c: Buffer) => {
    buf = Buffer.concat([buf, c]);
  });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const yieldTurn = () => new Promise((resolve) => setImmediate(resolve));
  if (conn.behaviour === 'pieces') {
    let at = 0;
    for (let i = 0; at < all.length; i++) {
      const n = conn.pieces[i % conn.pieces.length] as number;
      socket.write(all.subarray(at, at + n));
      at += n;
      await yieldTurn();
    }
  } else if (conn.behaviour === 'reset-mid') {
    socket.write(all.subarray(0, Math.floor(all.length * conn.cut)));
    await yieldTurn();
    socket.resetAndDestroy();
    await closedP;
    return { finals: [], interims: 0, closedByServer: false };
  } else {
    socket.write(all);
  }
  if (conn.behaviour === 'leave') {
    socket.destroy();
    await closedP;
    return { finals: [], interims: 0, closedByServer: false };
  }
  if (conn.behaviour === 'half-close') socket.end();

  // Read answers in order until each request has one, or one says the connection closes.
  const finals: Parsed[] = [];
  let interims = 0;
  let wanted = conn.reqs.length;
  for (;;) {
    const req = conn.reqs[finals.length];
    if (req === undefined || finals.length >= wanted) break;
    const parsed = parseOne(buf, req.method, closed);
    if (parsed === undefined) {
      if (closed) break;
      await new Promise<void>((resolve) => {
        const on = () => {
          socket.off('data', on);
          socket.off('close', on);
          resolve();
        };
        socket.on('data', on);
        socket.on('close', on);
      });
      continue;
    }
    buf = buf.subarray(parsed.used);
    if (parsed.answer.status < 200) {
      interims++;
      continue;
    }
    finals.push(parsed.answer);
    if (parsed.answer.headers.get('connection')?.[0]?.toLowerCase() === 'close') {
      wanted = finals.length;
      // It said it closes: it must (a hang here fails the test by its timeout).
      await closedP;
    }
  }
  const closedByServer = closed;
  if (!closed) socket.destroy();
  await closedP;
  return {
    finals,
    interims,
    closedByServer,
    reset,
    ...(buf.length > 0 ? { rest: buf.toString('latin1') } : {}),
  };
}

/** What a completed exchange must satisfy; returns the problems found. */
function check(conn: Conn, out: Outcome & { rest?: string }): string[] {
  if (conn.behaviour === 'reset-mid' || conn.behaviour === 'leave') return [];
  const problems: string[] = [];
  // Requests up to and including the first that breaks framing or asks to close get answers.
  let expected = 0;
  for (const r of conn.reqs) {
    expected++;
    if (r.breaks) break;
  }
  out.finals.forEach((a, i) => {
    for (const p of problemsOf(a, conn.reqs[i] as Req))
      problems.push(`answer ${i} (${conn.reqs[i]?.kind}): ${p}`);
  });
  const last = out.finals.at(-1);
  const lastCloses = last?.headers.get('connection')?.[0]?.toLowerCase() === 'close';
  // node:http (httpAllowHalfOpen false) takes a half-close for a client that left: requests
  // still running then are aborted (499) and unanswered; those answered before must be right.
  const halfClosed = conn.behaviour === 'half-close' && out.closedByServer;
  // Every close, that of a request node cannot parse included, lingers (linger.ts): bytes this
  // client still sends draw no reset, and no answer is lost.
  if (out.reset === true) problems.push('the server reset the connection');
  if (out.finals.length < expected && !(lastCloses && out.closedByServer) && !halfClosed) {
    problems.push(
      `${out.finals.length} answers to ${expected} requests (closed by server: ${out.closedByServer})`,
    );
  }
  if (out.finals.length > expected) problems.push(`${out.finals.length} answers to ${expected} requests`);
  if (out.rest !== undefined && out.rest.length > 0)
    problems.push(`bytes after the answers: ${JSON.stringify(out.rest.slice(0, 80))}`);
  return problems;
}

// ---- the test -------------------------------------------------------------------------------

/**
 * Until the server holds no connection and the runtime no call: nothing more can arrive. (A
 * worker gives its capacity back before its result reaches this thread: depth reads 0 a little
 * before running does.)
 */
async function quiet(s: ServeHandle, g: Gated): Promise<void> {
  const connections = (): Promise<number> =>
    new Promise((resolve, reject) =>
      s.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
    );
  const idle = (): boolean => {
    const r = g.lr.report();
    return r.depth === 0 && r.running === 0 && r.queued === 0;
  };
  await until(async () => (await connections()) === 0 && idle(), 'the server to be quiet');
}

let started: { g: Gated; s: ServeHandle } | undefined;
afterAll(async () => {
  await started?.s.close();
});

describe(`randomized traffic (seed ${SEED}, ${RUNS} runs; SERVE_FUZZ_SEED, SERVE_FUZZ_RUNS)`, () => {
  it('every answer well-formed and documented; nothing left in flight; the drain is clean', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(String(w));
    process.on('warning', onWarning);
    const g = await startGated({
      inFeatures: IN,
      outFeatures: OUT,
      threads: 1,
      open: true,
      admission: { requests: 2, units: UNITS },
    });
    const s = await serve(g.lr, { port: 0, bodyLimit: BODY_LIMIT, deadlineMs: 30_000 });
    started = { g, s };
    const statuses = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        fc.array(connArb, { minLength: 1, maxLength: 8 }),
        fc.option(fc.integer({ min: 0, max: 8 })),
        async (conns, openAfter) => {
          // Half the runs start with the request bound held by two calls at the closed gate: every
          // call of the batch is refused (503) until the gate opens after `openAfter` connections
          // ended. No exchange needs a worker meanwhile, so each can end.
          let held: Promise<unknown> | undefined;
          if (openAfter !== null) {
            // The last run's connections may still be read (a client that left) or end calls.
            await quiet(s, g);
            Atomics.store(g.words, GATE, 0);
            const one = Buffer.concat([
              Buffer.from(
                head('POST', '/v1/linear', [
                  ['Content-Type', 'application/octet-stream'],
                  ['Content-Length', '16'],
                ]),
              ),
              floats([1, 2, 3, 4]),
            ]);
            held = pipelinedExchange(s.port, Buffer.concat([one, one]), 2);
            await until(() => g.lr.report().depth === 2, 'the bound to be held');
          }
          let ended = 0;
          const opened = (): void => {
            if (openAfter !== null && ++ended === Math.min(openAfter, conns.length)) g.open();
          };
          if (openAfter === 0) g.open();
          const outs = await Promise.all(
            conns.map(async (c) => {
              const out = await exchange(s.port, c);
              opened();
              return out;
            }),
          );
          if (held !== undefined) expect(await held).toEqual({ statuses: [200, 200], closed: false });
          const problems: string[] = [];
          conns.forEach((c, i) => {
            const out = outs[i] as Outcome;
            for (const a of out.finals) {
              const key = `${a.status}`;
              statuses.set(key, (statuses.get(key) ?? 0) + 1);
            }
            const heard = out.finals.map(
              (a) => `${a.status}${a.headers.get('connection')?.[0] === 'close' ? '+close' : ''}`,
            );
            for (const p of check(c, out))
              problems.push(
                `conn ${i} [${c.behaviour}] heard ${heard.join(',')}${out.reset ? ' (reset)' : ''}: ${p}`,
              );
          });
          if (problems.length > 0) throw new Error(problems.join('\n'));
        },
      ),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    // The traffic reached every kind of answer it is meant to: a generator that stopped making
    // refusals or bad bodies would otherwise pass on what is left.
    if (RUNS >= 100) {
      for (const status of ['200', '400', '404', '413', '415', '503']) {
        expect(statuses.get(status) ?? 0, `answers ${status}`).toBeGreaterThan(0);
      }
    }

    // Every socket is closed: the server must come back to rest.
    await quiet(s, g);
    await until(
      async () => sample((await s.metrics.scrape()).text, 'omni_http_inflight') === 0,
      'no request in flight',
    );
    const report = g.lr.report();
    expect(report).toMatchObject({ depth: 0, running: 0, queued: 0, units: 0, waiting: 0 });
    const text = (await s.metrics.scrape()).text;
    // The runtime counts a cost that can never fit (413 too-large) as a refusal too.
    const refusedByRuntime = [
      ['requests', 503],
      ['units', 503],
      ['queued', 503],
      ['too-large', 413],
    ]
      .map(([r, status]) => sample(text, `omni_http_refused_total{reason="${r}",status="${status}"}`) ?? 0)
      .reduce((a, b) => a + b, 0);
    expect(refusedByRuntime).toBe(report.rejected);
    expect(report.refused).toBe(report.rejected);
    expect(await s.drain({ timeoutMs: 10_000 })).toEqual({ clean: true, abandonedRequests: 0 });
    process.off('warning', onWarning);
    expect(warnings).toEqual([]);
  });
});
