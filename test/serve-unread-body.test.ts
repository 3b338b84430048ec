/**
 * Answers given before a request's body was read, outside the route's own error path: a
 * malformed URL (answered by fastify before routing) and a GET whose body nobody reads. node
 * would go on parsing that body on a kept-alive connection, so a malformed rest of it drew a
 * second, unasked answer; one request must get one answer, and the connection then closes.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { type ServeHandle, serve } from '../src/serve/index.js';
import { answerThenMalformedRest } from './fixtures/serve-client.js';
import { type Gated, startGated } from './fixtures/serve-harness.js';

let started: Promise<{ g: Gated; s: ServeHandle }> | undefined;
function shared(): Promise<{ g: Gated; s: ServeHandle }> {
  started ??= (async () => {
    const g = await startGated({ inFeatures: 4, outFeatures: 3, open: true, admission: { requests: 4 } });
    return { g, s: await serve(g.lr, { port: 0 }) };
  })();
  return started;
}

afterAll(async () => {
  await (await started)?.s.close();
});

describe('an answer sent before the body was read', () => {
  it.each([
    ['POST /v1/linear%zz HTTP/1.1', 400],
    ['GET /health HTTP/1.1', 200],
    ['GET /metrics HTTP/1.1', 200],
  ])('%s: one answer (%i) with Connection: close, no second one', async (requestLine, status) => {
    const { g, s } = await shared();
    const before = g.entered();
    const text = await answerThenMalformedRest(s.port, requestLine);
    expect(text.match(/HTTP\/1\.1 \d{3} /g)).toEqual([`HTTP/1.1 ${status} `]);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(g.entered() - before).toBe(0);
  });
});
