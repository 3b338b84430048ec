/**
 * Answers given before a request's body was read, outside the route's own error path: a
 * malformed URL (answered by fastify before routing) and a GET whose body nobody reads. node
 * would go on parsing that body on a kept-alive connection, so a malformed rest of it drew a
 * second, unasked answer; one request must get one answer, and the connection then closes.
 */
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServeHandle, serve } from '../src/serve/index.js';
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

/**
 * Sends a request line and the first chunk of a chunked body, waits for the whole first
 * answer (its Content-Length says when), then sends a rest that is not a chunk size, and
 * returns everything heard until the server closes the connection.
 */
async function answerThenMalformedRest(port: number, requestLine: string): Promise<string> {
  const socket = connect({ host: '127.0.0.1', port });
  // Writing the rest to a connection the server already closed may fail: that is the point.
  socket.on('error', () => {});
  const heard: Buffer[] = [];
  let answered!: () => void;
  const first = new Promise<void>((resolve) => {
    answered = resolve;
  });
  socket.on('data', (c: Buffer) => {
    heard.push(c);
    if (firstAnswerComplete(Buffer.concat(heard))) answered();
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const chunk = Buffer.from(new Float32Array([1, 2]).buffer);
  socket.write(
    `${requestLine}\r\nHost: x\r\nContent-Type: application/octet-stream\r\n` +
      `Transfer-Encoding: chunked\r\n\r\n${chunk.length.toString(16)}\r\n`,
  );
  socket.write(chunk);
  await first;
  socket.write('\r\nQQ\r\n');
  await closed;
  return Buffer.concat(heard).toString('utf8');
}

function firstAnswerComplete(bytes: Buffer): boolean {
  const split = bytes.indexOf('\r\n\r\n');
  if (split < 0) return false;
  const length = /\r\ncontent-length: (\d+)/i.exec(bytes.subarray(0, split).toString('latin1'))?.[1];
  return length !== undefined && bytes.length - (split + 4) >= Number(length);
}

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
