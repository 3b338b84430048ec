/**
 * A request whose headers already condemn it (a rows hint, or an octet-stream Content-Length,
 * of more rows than the runtime can ever serve, a malformed or contradictory hint, a malformed
 * deadline, an octet-stream Content-Length that cannot hold whole rows or the hinted ones, a
 * chunked body whose hinted rows cannot fit the body limit) is refused before its body is read:
 * with the answer, counts and status the handler (or fastify's body limit) gave once it had read
 * a body that matches the hint, but without the upload (a JSON body with other rows, or a
 * malformed one, was its 400 there). Before, a client sending `Expect: 100-continue` heard 100
 * Continue and uploaded everything for that refusal, and one that held its body back got no
 * answer until it sent it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServeHandle, serve } from '../src/serve/index.js';
import { rawExchange } from './fixtures/serve-client.js';
import { type Gated, sharedServed, startGated, widthReadTwice } from './fixtures/serve-harness.js';

const IN = 4;
const UNITS = 8;
/** More than one native call takes (MAX_ROWS), checked before the unit ceiling. */
const OVER_MAX_ROWS = 65_537;

const shared = sharedServed({
  inFeatures: IN,
  outFeatures: 3,
  open: true,
  admission: { requests: 4, units: UNITS },
});
afterAll(shared.close);

function octets(rows: number): Buffer {
  return Buffer.from(new Float32Array(rows * IN).fill(0.5).buffer);
}

function jsonRows(rows: number): string {
  return JSON.stringify({ rows: Array.from({ length: rows }, () => [1, 2, 3, 4]) });
}

/** What a refused request hears and what its refusal counts. */
interface Outcome {
  readonly status: number;
  readonly code: string;
  /** The runtime's outcomes.refused and admission rejected: what the handler's refusal counts. */
  readonly refused: number;
  readonly rejected: number;
  /** omni_http_refused_total{reason="too-large",status="413"}. */
  readonly tooLarge: number;
}

interface Case extends Outcome {
  readonly name: string;
  readonly target: string;
  readonly headers: string;
  readonly type: string;
  readonly body: Buffer | string;
}

/** The unit ceiling's refusal: the handler's admission refuses it, and counts it everywhere. */
const OVER_UNITS: Outcome = { status: 413, code: 'OMNI_ERR_TOO_LARGE', refused: 1, rejected: 1, tooLarge: 1 };
/** More rows than one native call takes: refused before admission, so no admission refusal. */
const OVER_MAX_ROWS_CALL: Outcome = {
  status: 413,
  code: 'OMNI_ERR_TOO_LARGE',
  refused: 1,
  rejected: 0,
  tooLarge: 1,
};
/** A 400 of the handler's own checks, before any admission: nothing counted as a refusal. */
const BAD_REQUEST: Outcome = {
  status: 400,
  code: 'OMNI_ERR_BAD_REQUEST',
  refused: 0,
  rejected: 0,
  tooLarge: 0,
};
const BAD_BODY: Outcome = { status: 400, code: 'OMNI_ERR_BAD_BODY', refused: 0, rejected: 0, tooLarge: 0 };

const OCTET = 'application/octet-stream';
const CASES: readonly Case[] = [
  {
    name: 'more rows than --units (query)',
    target: `/v1/linear?rows=${UNITS + 1}`,
    headers: '',
    type: OCTET,
    body: octets(UNITS + 1),
    ...OVER_UNITS,
  },
  {
    name: 'more rows than --units (JSON, header)',
    target: '/v1/linear',
    headers: `x-omni-rows: ${UNITS + 1}\r\n`,
    type: 'application/json',
    body: jsonRows(UNITS + 1),
    ...OVER_UNITS,
  },
  {
    name: 'more rows than one native call takes',
    target: '/v1/linear',
    headers: `x-omni-rows: ${OVER_MAX_ROWS}\r\n`,
    type: OCTET,
    body: octets(OVER_MAX_ROWS),
    ...OVER_MAX_ROWS_CALL,
  },
  {
    // No hint: an octet-stream Content-Length of whole rows says the rows as well as a hint does.
    name: 'no hint, an octet-stream Content-Length of more rows than --units',
    target: '/v1/linear',
    headers: '',
    type: OCTET,
    body: octets(UNITS + 1),
    ...OVER_UNITS,
  },
  {
    name: 'no hint, an octet-stream Content-Length of more rows than one native call takes',
    target: '/v1/linear',
    headers: '',
    type: OCTET,
    body: octets(OVER_MAX_ROWS),
    ...OVER_MAX_ROWS_CALL,
  },
  {
    name: 'a malformed hint',
    target: '/v1/linear?rows=0',
    headers: '',
    type: OCTET,
    body: octets(1),
    ...BAD_REQUEST,
  },
  {
    name: 'a query and a header that disagree',
    target: '/v1/linear?rows=1',
    headers: 'x-omni-rows: 2\r\n',
    type: OCTET,
    body: octets(1),
    ...BAD_REQUEST,
  },
  {
    name: 'a Content-Length that does not hold the hinted rows',
    target: '/v1/linear?rows=2',
    headers: '',
    type: OCTET,
    body: octets(3),
    ...BAD_BODY,
  },
  {
    name: 'a malformed deadline, no hint',
    target: '/v1/linear',
    headers: 'x-omni-deadline-ms: soon\r\n',
    type: OCTET,
    body: octets(1),
    ...BAD_REQUEST,
  },
  {
    // node joins the two into one value, '5, 5': not a number, whichever a proxy would pick.
    name: 'a deadline sent twice',
    target: '/v1/linear',
    headers: 'x-omni-deadline-ms: 5\r\nx-omni-deadline-ms: 5\r\n',
    type: OCTET,
    body: octets(1),
    ...BAD_REQUEST,
  },
  {
    name: 'a deadline of -0',
    target: '/v1/linear',
    headers: 'x-omni-deadline-ms: -0\r\n',
    type: OCTET,
    body: octets(1),
    ...BAD_REQUEST,
  },
  {
    name: 'no hint, a Content-Length that is not whole rows',
    target: '/v1/linear',
    headers: '',
    type: OCTET,
    body: Buffer.alloc((IN + 1) * 4),
    ...BAD_BODY,
  },
  {
    // Media types are case-insensitive (RFC 9110 8.3.1): read as another type, it was uploaded.
    name: 'the octet-stream type in capitals, a Content-Length that is not whole rows',
    target: '/v1/linear',
    headers: '',
    type: 'Application/Octet-Stream',
    body: Buffer.alloc((IN + 1) * 4),
    ...BAD_BODY,
  },
  {
    // Whitespace may come before a media type's parameters (RFC 9110 5.6.6): the body is read
    // as octets, so the headers are too.
    name: 'the octet-stream type with a space before its parameters, not whole rows',
    target: '/v1/linear',
    headers: '',
    type: 'application/octet-stream ;x=1',
    body: Buffer.alloc((IN + 1) * 4),
    ...BAD_BODY,
  },
  {
    name: 'no hint, a Content-Length that is not whole floats',
    target: '/v1/linear',
    headers: '',
    type: OCTET,
    body: Buffer.alloc(IN * 4 + 2),
    ...BAD_BODY,
  },
  {
    name: 'too many rows and a malformed deadline: the deadline, as the handler checks it first',
    target: `/v1/linear?rows=${UNITS + 1}`,
    headers: 'x-omni-deadline-ms: soon\r\n',
    type: OCTET,
    body: octets(UNITS + 1),
    ...BAD_REQUEST,
  },
];

function head(c: Case, extra = ''): string {
  return (
    `POST ${c.target} HTTP/1.1\r\nHost: x\r\nContent-Type: ${c.type}\r\n` +
    `Content-Length: ${Buffer.byteLength(c.body)}\r\n${c.headers}${extra}\r\n`
  );
}

interface Counts {
  readonly refused: number;
  readonly rejected: number;
  readonly tooLarge: number;
  readonly entered: number;
}

async function counts(g: Gated, s: ServeHandle): Promise<Counts> {
  const report = g.lr.report();
  const text = (await s.metrics.scrape()).text;
  const line = /^omni_http_refused_total\{reason="too-large",status="413"\} (\d+)$/m.exec(text);
  return {
    refused: report.refused,
    rejected: report.rejected,
    tooLarge: Number(line?.[1] ?? 0),
    entered: g.entered(),
  };
}

function expectCounted(c: Outcome, before: Counts, after: Counts): void {
  expect({
    refused: after.refused - before.refused,
    rejected: after.rejected - before.rejected,
    tooLarge: after.tooLarge - before.tooLarge,
    entered: after.entered - before.entered,
  }).toEqual({ refused: c.refused, rejected: c.rejected, tooLarge: c.tooLarge, entered: 0 });
}

/** The status line and the JSON code of the first answer in `text`, once it is all there. */
function parsed(text: string): { status: number; code: unknown } | undefined {
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) return undefined;
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(text.slice(0, split))?.[1]);
  const body = text.slice(split + 4);
  if (!(body.length >= length)) return undefined;
  return {
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]),
    code: (JSON.parse(body.slice(0, length)) as { code?: unknown }).code,
  };
}

describe('the same answer and counts as after reading the body', () => {
  // The reference: the body sent in full, as the handler has always answered it.
  it.each(CASES)('$name: body sent in full', async (c) => {
    const { g, s } = await shared();
    const before = await counts(g, s);
    const answer = await rawExchange(s.port, [head(c, 'Connection: close\r\n'), c.body]);
    expect(answer.status).toBe(c.status);
    expect((JSON.parse(answer.body) as { code?: unknown }).code).toBe(c.code);
    expectCounted(c, before, await counts(g, s));
  });
});

/**
 * Sends a request's head and never its body: what the server said first, and all it said
 * before it closed the connection (a refusal closes it: the body is not wanted). A 100 Continue
 * would leave the server waiting for the body, so the client hangs up then.
 */
async function withheldBody(port: number, requestHead: string): Promise<{ first: string; text: string }> {
  const socket = connect({ host: '127.0.0.1', port });
  let text = '';
  const first = new Promise<string>((resolve) => {
    socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1')));
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1');
  });
  socket.write(requestHead);
  const heard = await first;
  if (/^HTTP\/1\.1 100 /.test(heard)) socket.destroy();
  await closed;
  return { first: heard, text };
}

describe('refused from its headers, with no body sent', () => {
  it.each(CASES)('$name: Expect: 100-continue hears the refusal, never 100 Continue', async (c) => {
    const { g, s } = await shared();
    const before = await counts(g, s);
    // The body is never sent. Before: the first thing heard was the 100 Continue.
    const { first, text } = await withheldBody(s.port, head(c, 'Expect: 100-continue\r\n'));
    expect(first).not.toMatch(/^HTTP\/1\.1 100 /);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(parsed(text)).toEqual({ status: c.status, code: c.code });
    expectCounted(c, before, await counts(g, s));
  });

  it.each(CASES)('$name: a client holding its body back gets the answer first', async (c) => {
    const { g, s } = await shared();
    const before = await counts(g, s);
    // Which comes first on the server: the answer written in full, or the request's body being
    // read (its stream resumed). node resumes an unread request only after its answer finished.
    const order = new Promise<string>((resolve) => {
      s.app.server.once('request', (req: IncomingMessage, res: ServerResponse) => {
        req.once('resume', () => resolve('body read'));
        res.once('finish', () => resolve('answered'));
      });
    });
    const socket = connect({ host: '127.0.0.1', port: s.port });
    let text = '';
    const answered = new Promise<void>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        if (parsed(text) !== undefined) resolve();
      });
    });
    socket.write(head(c));
    // Before: the server read on, waiting for the body, and never answered.
    expect(await order).toBe('answered');
    await answered;
    socket.destroy();
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(parsed(text)).toEqual({ status: c.status, code: c.code });
    expectCounted(c, before, await counts(g, s));
  });
});

describe('a hint that fits', () => {
  it('hears 100 Continue, then is served', async () => {
    const { g, s } = await shared();
    const before = g.entered();
    const body = octets(2);
    const answer = await rawExchange(s.port, [
      'POST /v1/linear?rows=2 HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
        `Content-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
      body,
    ]);
    expect(answer.status).toBe(100);
    expect(answer.body).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(answer.body).toMatch(/\r\nx-omni-rows: 2\r\n/i);
    expect(g.entered() - before).toBe(1);
  });

  it('chunked, with no Content-Length to compare: read and served', async () => {
    const { g, s } = await shared();
    const before = g.entered();
    const body = octets(UNITS);
    const answer = await rawExchange(s.port, [
      `POST /v1/linear?rows=${UNITS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n` +
        'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
      `${body.length.toString(16)}\r\n`,
      body,
      '\r\n0\r\n\r\n',
    ]);
    expect(answer.status).toBe(200);
    expect(g.entered() - before).toBe(1);
  });
});

describe('a chunked body whose hint is more rows than --units', () => {
  // No Content-Length settles the rows, the hint alone does: taken for an empty body, the
  // request heard 100 Continue and uploaded everything for the same 413 after.
  it('Expect: 100-continue hears the refusal, never 100 Continue, counted as after the upload', async () => {
    const { g, s } = await shared();
    const before = await counts(g, s);
    const { first, text } = await withheldBody(
      s.port,
      `POST /v1/linear?rows=${UNITS + 1} HTTP/1.1\r\nHost: x\r\nContent-Type: ${OCTET}\r\n` +
        'Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n',
    );
    expect(first).not.toMatch(/^HTTP\/1\.1 100 /);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(parsed(text)).toEqual({ status: 413, code: 'OMNI_ERR_TOO_LARGE' });
    expectCounted(OVER_UNITS, before, await counts(g, s));
  });
});

describe('a runtime whose admission waits (wait: true)', () => {
  // Its unit-ceiling refusal comes from admit(), not tryAdmit(): counted the same way there.
  it('more rows than --units: refused before the upload, counted as after it', async () => {
    const g = await startGated({
      inFeatures: IN,
      outFeatures: 3,
      open: true,
      admission: { requests: 2, units: UNITS, wait: true },
    });
    const s = await serve(g.lr, { port: 0 });
    try {
      const c = CASES[0]!;
      const full = await counts(g, s);
      const read = await rawExchange(s.port, [head(c, 'Connection: close\r\n'), c.body]);
      const early = await counts(g, s);
      expectCounted(c, full, early);
      const socket = connect({ host: '127.0.0.1', port: s.port });
      const first = new Promise<string>((resolve) => {
        socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1')));
      });
      socket.write(head(c, 'Expect: 100-continue\r\n'));
      const heard = await first;
      socket.destroy();
      expect(heard).toMatch(/^HTTP\/1\.1 413 /);
      expect(read.status).toBe(413);
      expectCounted(c, early, await counts(g, s));
    } finally {
      await s.close();
    }
  });
});

describe('a chunked body whose hinted rows cannot fit the body limit', () => {
  // 70 bytes: 4 octet rows (64) fit, 5 (80) do not; the shortest JSON of 6 rows of 4 numbers,
  // {"rows":[[0,0,0,0],...]}, is exactly 70 bytes, so 6 rows fit and 7 do not.
  const LIMIT = 70;
  const JSON_TYPE = 'application/json';

  function chunkedHead(rows: number, type: string, extra: string): string {
    return (
      `POST /v1/linear?rows=${rows} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\n` +
      `Transfer-Encoding: chunked\r\n${extra}\r\n`
    );
  }

  function chunked(body: Buffer | string): (string | Buffer)[] {
    return [`${Buffer.byteLength(body).toString(16)}\r\n`, body, '\r\n0\r\n\r\n'];
  }

  function shortestJson(rows: number): string {
    return JSON.stringify({ rows: Array.from({ length: rows }, () => new Array(IN).fill(0)) });
  }

  /**
   * Everything the server says to a head sent alone, up to its close, and its first packet. A
   * first packet that is not a 413 (a 100 Continue) would leave the server waiting for the body:
   * the client hangs up instead.
   */
  async function heardForHead(port: number, text: string): Promise<{ first: string; all: string }> {
    const socket = connect({ host: '127.0.0.1', port });
    let all = '';
    const first = new Promise<string>((resolve) => {
      socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1')));
    });
    socket.on('data', (chunk: Buffer) => {
      all += chunk.toString('latin1');
    });
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(text);
    const heard = await first;
    if (!heard.startsWith('HTTP/1.1 413 ')) socket.destroy();
    await closed;
    return { first: heard, all };
  }

  async function bodyTooLarge(s: ServeHandle): Promise<number> {
    const text = (await s.metrics.scrape()).text;
    const line = /^omni_http_refused_total\{reason="body-too-large",status="413"\} (\d+)$/m.exec(text);
    return Number(line?.[1] ?? 0);
  }

  async function withServer(test: (g: Gated, s: ServeHandle) => Promise<void>): Promise<void> {
    const g = await startGated({ inFeatures: IN, outFeatures: 3, open: true, admission: { requests: 4 } });
    const s = await serve(g.lr, { port: 0, bodyLimit: LIMIT });
    try {
      await test(g, s);
    } finally {
      await s.close();
    }
  }

  it('a width that reads otherwise after serve() checked it: the checked one measures the rows', async () => {
    // Read again per request, the width was twice IN there: 4 rows that fit were refused 413.
    const g = await startGated({ inFeatures: IN, outFeatures: 3, open: true, admission: { requests: 4 } });
    const lr = g.lr;
    const runtime = widthReadTwice(lr, 'inFeatures');
    const s = await serve(runtime, { port: 0, bodyLimit: LIMIT });
    try {
      const answer = await rawExchange(s.port, [
        chunkedHead(4, OCTET, 'Connection: close\r\n'),
        ...chunked(octets(4)),
      ]);
      expect(answer.status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('the reference: sent in full, fastify refuses it 413 once the limit is passed', async () => {
    await withServer(async (g, s) => {
      const before = g.entered();
      for (const [type, body] of [
        [OCTET, octets(5)],
        [JSON_TYPE, shortestJson(7)],
      ] as const) {
        const answer = await rawExchange(s.port, [
          chunkedHead(type === OCTET ? 5 : 7, type, 'Connection: close\r\n'),
          ...chunked(body),
        ]);
        expect([type, answer.status]).toEqual([type, 413]);
        expect((JSON.parse(answer.body) as { code?: unknown }).code).toBe('OMNI_ERR_BODY_TOO_LARGE');
      }
      expect(g.entered() - before).toBe(0);
    });
  });

  it('Expect: 100-continue hears the 413 at once, never 100 Continue, counted as fastify counts it', async () => {
    await withServer(async (g, s) => {
      for (const [rows, type] of [
        [5, OCTET],
        [7, JSON_TYPE],
      ] as const) {
        const before = await bodyTooLarge(s);
        // Before: 100 Continue, then the upload, then fastify's 413.
        const heard = await heardForHead(s.port, chunkedHead(rows, type, 'Expect: 100-continue\r\n'));
        expect([type, heard.first.slice(0, 12)]).toEqual([type, 'HTTP/1.1 413']);
        expect(heard.all).toMatch(/\r\nconnection: close\r\n/i);
        expect(parsed(heard.all)).toEqual({ status: 413, code: 'OMNI_ERR_BODY_TOO_LARGE' });
        expect(await bodyTooLarge(s)).toBe(before + 1);
      }
      expect(g.entered()).toBe(0);
    });
  });

  it('hinted rows whose shortest body fits exactly hear 100 Continue and are served', async () => {
    await withServer(async (g, s) => {
      for (const [rows, type, body] of [
        [4, OCTET, octets(4)],
        [6, JSON_TYPE, shortestJson(6)],
      ] as const) {
        expect(Buffer.byteLength(body)).toBeLessThanOrEqual(LIMIT);
        const answer = await rawExchange(s.port, [
          chunkedHead(rows, type, 'Expect: 100-continue\r\nConnection: close\r\n'),
          ...chunked(body),
        ]);
        expect([type, answer.status]).toEqual([type, 100]);
        expect(answer.body).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      }
      expect(Buffer.byteLength(shortestJson(6))).toBe(LIMIT);
      expect(g.entered()).toBe(2);
    });
  });
});
