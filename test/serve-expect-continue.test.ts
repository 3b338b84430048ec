/**
 * `Expect: 100-continue` (curl sends it for large bodies): the client waits to upload until the
 * server says 100 Continue. node says it at once by default, so a request about to be refused
 * before its body is read (too large, another media type, a draining server) was uploaded for
 * nothing. The 100 now comes only once those checks have passed; a refusal comes instead of it.
 * It follows node's own reading of the header (an HTTP/1.0 request's expectation is ignored; a
 * list naming 100-continue is one), and is sent only for a body the server reads (a GET's body
 * is never read; a 404's is, when it has a parser).
 */
import type { ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServeHandle, serve } from '../src/serve/index.js';
import { until } from './fixtures/runtime-harness.js';
import { rawExchange } from './fixtures/serve-client.js';
import { ENTERED, HELD_INPUT } from './fixtures/serve-gate-layout.js';
import { type Gated, sharedServed, startGated } from './fixtures/serve-harness.js';

const IN = 4;
const shared = sharedServed(
  { inFeatures: IN, outFeatures: 3, open: true, admission: { requests: 4 } },
  { bodyLimit: 64 },
);
afterAll(shared.close);

function head(type: string, length: number): string {
  return (
    `POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\n` +
    `Content-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`
  );
}

describe('Expect: 100-continue', () => {
  // fastify closes the connection after every body parser error; serve() keeps it open when the
  // whole body was read, unless a 100 Continue is still owed. Once written, none is owed: taken
  // as still owed, the 400 closed the connection and the request pipelined after it was dropped.
  it('a malformed JSON body sent after its 100 Continue: 400, and the connection serves on', async () => {
    const { s } = await shared();
    const body = '{"rows": nope}';
    const socket = connect({ host: '127.0.0.1', port: s.port });
    socket.on('error', () => {});
    let heard = '';
    const finals = (): string[] =>
      [...heard.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]!).filter((c) => c !== '100');
    let wake: () => void = () => {};
    socket.on('data', (chunk: Buffer) => {
      heard += chunk.toString('latin1');
      wake();
    });
    const until100 = new Promise<void>((resolve) => {
      wake = () => {
        if (heard.includes('100 Continue')) resolve();
      };
    });
    socket.write(head('application/json', Buffer.byteLength(body)));
    await until100;
    const answered = new Promise<void>((resolve) => {
      wake = () => {
        if (finals().length === 2 && heard.endsWith('}')) resolve();
      };
      socket.once('close', () => resolve());
    });
    socket.write(`${body}GET /health HTTP/1.1\r\nHost: x\r\n\r\n`);
    await answered;
    socket.destroy();
    expect(finals()).toEqual(['400', '200']);
    expect(heard).not.toMatch(/\r\nconnection: close\r\n/i);
  });

  it.each([
    ['a body over the limit', head('application/octet-stream', 1000), 413],
    ['another media type', head('text/plain', 16), 415],
    [
      'a compressed body',
      head('application/octet-stream', 16).replace('\r\n\r\n', '\r\nContent-Encoding: gzip\r\n\r\n'),
      415,
    ],
  ])('%s: refused at once, with no 100 Continue before it', async (_, request, status) => {
    const { g, s } = await shared();
    const before = g.entered();
    // The body is never sent: the client waits for a 100 that must not come.
    const answer = await rawExchange(s.port, [request]);
    expect(answer.status).toBe(status);
    expect(answer.head).not.toMatch(/100 Continue/);
    expect(g.entered() - before).toBe(0);
  });

  it('an accepted request hears 100 Continue, then sends its body and gets its rows', async () => {
    const { s } = await shared();
    const socket = connect({ host: '127.0.0.1', port: s.port });
    const heard: Buffer[] = [];
    let onData = (): void => {};
    socket.on('data', (c: Buffer) => {
      heard.push(c);
      onData();
    });
    const text = (): string => Buffer.concat(heard).toString('latin1');
    const until = (done: () => boolean): Promise<void> =>
      new Promise((resolve) => {
        onData = () => done() && resolve();
        onData();
      });
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(head('application/octet-stream', 4 * IN));
    await until(() => text().includes('\r\n\r\n'));
    expect(text()).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
    socket.write(Buffer.from(new Float32Array([1, 2, 3, 4]).buffer));
    await until(() => /HTTP\/1\.1 200 /.test(text()) && /\r\n\r\n[\s\S]{12}$/.test(text()));
    socket.destroy();
    expect(text()).toMatch(/HTTP\/1\.1 200 OK\r\n/);
  });
});

const BODY = Buffer.from(new Float32Array([1, 2, 3, 4]).buffer);

describe('Expect: 100-continue edges', () => {
  it('an HTTP/1.0 request hears no 100 Continue (its expectation is ignored)', async () => {
    const { s } = await shared();
    const answer = await rawExchange(s.port, [
      'POST /v1/linear HTTP/1.0\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
        `Content-Length: ${BODY.length}\r\nExpect: 100-continue\r\n\r\n`,
      BODY,
    ]);
    expect(answer.status).toBe(200);
    expect(answer.head + answer.body).not.toMatch(/100 Continue/);
  });

  it('a GET, whose body is never read, hears no 100 Continue', async () => {
    const { s } = await shared();
    const answer = await rawExchange(s.port, [
      'GET /health HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        'Content-Length: 2\r\nExpect: 100-continue\r\n\r\n',
    ]);
    expect(answer.status).toBe(200);
    expect(answer.head).not.toMatch(/100 Continue/);
  });

  it('an Expect list naming 100-continue hears 100 Continue before its answer', async () => {
    const { s } = await shared();
    const answer = await rawExchange(s.port, [
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
        `Content-Length: ${BODY.length}\r\nExpect: 100-continue, 100-continue\r\nConnection: close\r\n\r\n`,
      BODY,
    ]);
    expect(answer.status).toBe(100);
    expect(answer.body).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  // Both are bodies the server reads: without their 100 a client that waits for it stalls.
  it.each([
    [
      'a chunked body (no Content-Length)',
      'Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked',
      Buffer.concat([Buffer.from(`${BODY.length.toString(16)}\r\n`), BODY, Buffer.from('\r\n0\r\n\r\n')]),
    ],
    [
      'a media type in capitals',
      `Content-Type: Application/Octet-Stream\r\nContent-Length: ${BODY.length}`,
      BODY,
    ],
  ])('%s hears 100 Continue before its answer', async (_, headers, body) => {
    const { s } = await shared();
    const answer = await rawExchange(s.port, [
      `POST /v1/linear HTTP/1.1\r\nHost: x\r\n${headers}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
      body,
    ]);
    expect(answer.status).toBe(100);
    expect(answer.body).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  // A body of exactly the limit is read and served: without its 100 a client that waits for it
  // never sends it (kills `Number(length) <= bodyLimit` turned into `<`).
  it('a body of exactly the limit hears 100 Continue: the limit is inclusive', async () => {
    const { s } = await shared();
    const atLimit = Buffer.from(new Float32Array(16).buffer); // 64 bytes: the shared server's limit
    const answer = await rawExchange(s.port, [
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
        `Content-Length: ${atLimit.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
      atLimit,
    ]);
    expect(answer.status).toBe(100);
    expect(answer.body).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  it('a 404 with a body it reads (JSON) hears 100 Continue: without it the client would wait for it', async () => {
    const { s } = await shared();
    const answer = await rawExchange(s.port, [
      'POST /nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        'Content-Length: 2\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n',
      '{}',
    ]);
    expect(answer.status).toBe(100);
    expect(answer.body).toMatch(/^HTTP\/1\.1 404 /);
  });
});

/** Two threads: a call pipelined behind a held one can end while that one is held. */
async function twoThreads(): Promise<{ g: Gated; s: ServeHandle }> {
  const g = await startGated({
    inFeatures: IN,
    outFeatures: 3,
    threads: 2,
    open: true,
    admission: { requests: 4 },
  });
  return { g, s: await serve(g.lr, { port: 0 }) };
}

describe('Expect: 100-continue on a pipelined request', () => {
  it('whose answer is ready while it waits behind an earlier one: no 100 Continue inside that answer', async () => {
    const { g, s } = await twoThreads();
    try {
      const octets = 'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n';
      const exchange = rawExchange(s.port, [
        `${octets}Content-Length: 16\r\n\r\n`,
        Buffer.from(new Float32Array([HELD_INPUT, 0, 0, 0]).buffer),
        `${octets}Content-Length: ${BODY.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
        BODY,
      ]);
      // The second call ends while the first is held: its whole answer is ready while it still
      // waits behind the first's, and its 100 Continue was decided before that.
      await until(() => g.lr.report().completed === 1, 'the second call to end');
      g.open();
      const { head, body } = await exchange;
      const wire = `${head}\r\n\r\n${body}`;
      const heads = [...wire.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
      // Before: 200, 200, 100: node put the second answer's head before the 100 it had buffered
      // (an octet-stream body), so the 100 sat inside that answer, read as its body. Its answer
      // was whole before it could be sent: no 100 is due then (its body came unasked).
      expect(heads).toEqual([200, 200]);
      const rows = Buffer.from(new Float32Array([10, 11, 12]).buffer).toString('utf8');
      expect(wire.endsWith(`\r\n\r\n${rows}`)).toBe(true);
    } finally {
      g.open();
      await s.close();
    }
  });

  it('answered while it waits, its 100 never sent: its answer says Connection: close, as the server closes', async () => {
    const { g, s } = await twoThreads();
    const responses: ServerResponse[] = [];
    s.app.server.on('request', (_req, res: ServerResponse) => responses.push(res));
    try {
      const exchange = rawExchange(s.port, [
        'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 16\r\n\r\n',
        Buffer.from(new Float32Array([HELD_INPUT, 0, 0, 0]).buffer),
        // An empty JSON body: fastify's parser error, whose Connection: close the server drops
        // for a request read whole, so that requests pipelined behind it are answered.
        'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 0\r\n' +
          'Expect: 100-continue\r\n\r\n',
        'GET /health HTTP/1.1\r\nHost: x\r\n\r\n',
      ]);
      await until(() => responses[1]?.headersSent === true, 'the second answer to be made while it waits');
      g.open();
      const { head, body } = await exchange;
      const answers = `${head}\r\n\r\n${body}`.split(/(?=HTTP\/1\.1 \d{3} )/);
      expect(answers.map((a) => Number(a.slice(9, 12)))).toEqual([200, 400]);
      // Before: the 400 said nothing of it, and the server closed: the client, told nothing,
      // lost the GET pipelined behind (a 499 on the server).
      expect(answers[1]).toMatch(/\r\nconnection: close\r\n/i);
    } finally {
      g.open();
      await s.close();
    }
  });

  it('whose body waits for its 100 Continue behind an earlier answer: it comes once that answer is out', async () => {
    const { g, s } = await twoThreads();
    const socket = connect({ host: '127.0.0.1', port: s.port });
    try {
      let heard = '';
      const statuses = (): number[] => [...heard.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
      const hear = (count: number): Promise<void> =>
        new Promise((resolve) => {
          const on = (chunk: Buffer): void => {
            heard += chunk.toString('latin1');
            if (statuses().length >= count) {
              socket.off('data', on);
              resolve();
            }
          };
          socket.on('data', on);
        });
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      const octets = 'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n';
      const continued = hear(2);
      socket.write(`${octets}Content-Length: 16\r\n\r\n`);
      socket.write(Buffer.from(new Float32Array([HELD_INPUT, 0, 0, 0]).buffer));
      socket.write(`${octets}Content-Length: ${BODY.length}\r\nExpect: 100-continue\r\n\r\n`);
      await g.reach(ENTERED, 1);
      g.open();
      await continued;
      expect(statuses()).toEqual([200, 100]);
      const answered = hear(3);
      socket.write(BODY);
      await answered;
      expect(statuses()).toEqual([200, 100, 200]);
    } finally {
      socket.destroy();
      g.open();
      await s.close();
    }
  });
});
