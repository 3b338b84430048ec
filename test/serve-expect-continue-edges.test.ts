/**
 * `Expect: 100-continue` edges: the 100 follows node's own reading of the header (an HTTP/1.0
 * request's expectation is ignored; a list naming 100-continue is one), and it is sent only for
 * a body the server reads (a GET's body is never read; a 404's is, when it has a parser).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { type ServeHandle, serve } from '../src/serve/index.js';
import { rawExchange } from './fixtures/serve-client.js';
import { type Gated, startGated } from './fixtures/serve-harness.js';

const IN = 4;
let started: Promise<{ g: Gated; s: ServeHandle }> | undefined;
function shared(): Promise<{ g: Gated; s: ServeHandle }> {
  started ??= (async () => {
    const g = await startGated({ inFeatures: IN, outFeatures: 3, open: true, admission: { requests: 4 } });
    return { g, s: await serve(g.lr, { port: 0, bodyLimit: 64 }) };
  })();
  return started;
}

afterAll(async () => {
  await (await started)?.s.close();
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
