/**
 * An answer written on a connection already destroyed (a reset or a failed write heard, node's
 * 'close' not yet said): node drops it without 'finish', yet the response reads
 * writableFinished (nothing is left in its buffer). Taken for an answer recorded on 'finish',
 * the request was recorded nowhere: it left omni_http_inflight without reaching the latency
 * histogram ("each request whose head was whole, once"). Found in randomized traffic: a request
 * pipelined behind a 400, answered as its connection failed (EPIPE) under the 400. Here the
 * connection is destroyed as the request arrives, before any answer is written.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, expect, it } from 'vitest';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { closeServed, listeningClient, startServed } from './fixtures/serve-harness.js';

afterEach(closeServed);

const series = (route: string, status: number): string =>
  `omni_http_request_duration_seconds_count{route="${route}",method="GET",status="${status}"}`;

/**
 * Sends `head` with its connection destroyed (server side) as node hands over the request;
 * resolves with the metrics once its response closed and the connection with it.
 */
async function destroyedOnArrival(event: 'request' | 'checkExpectation', head: string): Promise<string> {
  const { s } = await startServed({ inFeatures: 2, outFeatures: 2, open: true });
  let closed = false;
  // First: before node's, fastify's or this server's own listeners write anything.
  s.app.server.prependListener(event, (req: IncomingMessage, res: ServerResponse) => {
    req.socket.destroy();
    res.once('close', () => {
      closed = true;
    });
  });
  listeningClient(s.port).socket.write(head);
  let text = '';
  await until(async () => {
    text = (await s.metrics.scrape()).text;
    return closed && sample(text, 'omni_http_connections') === 0 && sample(text, 'omni_http_inflight') === 0;
  }, 'the response and its connection to close');
  return text;
}

it('a routed request: recorded once, as 499 (none of its answer left)', async () => {
  const text = await destroyedOnArrival('request', 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  // Before: no series at all.
  expect({ gone: sample(text, series('/health', 499)), ok: sample(text, series('/health', 200)) }).toEqual({
    gone: 1,
    ok: undefined,
  });
});

it('a malformed URL, answered before routing: recorded once, as 499', async () => {
  const text = await destroyedOnArrival('request', 'GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n');
  expect({
    gone: sample(text, series('unmatched', 499)),
    bad: sample(text, series('unmatched', 400)),
  }).toEqual({
    gone: 1,
    bad: undefined,
  });
});

it('an unsupported Expect, answered 417 by this server: recorded once, as 499', async () => {
  const text = await destroyedOnArrival(
    'checkExpectation',
    'GET /health HTTP/1.1\r\nHost: x\r\nExpect: knock\r\n\r\n',
  );
  expect({
    gone: sample(text, series('unmatched', 499)),
    refused: sample(text, series('unmatched', 417)),
  }).toEqual({ gone: 1, refused: undefined });
});
