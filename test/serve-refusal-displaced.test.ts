/**
 * A request refused from its headers (413 from its rows hint, 503 while draining) whose chunked
 * body is malformed in the same packet: node's parser reports the body's error in the read that
 * routed the request, before the route's hooks decide the refusal, so the client hears the raw
 * 400 (client-error.ts) in its place. omni_http_refused_total counts what the client hears: not
 * that refusal, which was never answered; the 400 is a client error. A refusal answered before
 * a malformed request after it is still counted.
 */
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { rawExchange } from './fixtures/serve-client.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import { closeServed, listeningClient, startServed } from './fixtures/serve-harness.js';

afterEach(closeServed);

const IN = 4;
const UNITS = 8;

const refused = (reason: string, status: number): string =>
  `omni_http_refused_total{reason="${reason}",status="${status}"}`;
const posts = (status: number): string =>
  `omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="${status}"}`;
const CHUNK_ERRORS = 'omni_http_client_errors_total{detail="HPE_INVALID_CHUNK_SIZE"}';

/** A chunked octet-stream POST whose first chunk size is not hex, all in one write. */
function malformedChunked(target: string): string {
  return (
    `POST ${target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n` +
    'Transfer-Encoding: chunked\r\n\r\nQQ\r\n'
  );
}

describe('a refusal from the headers, its body malformed in the same packet', () => {
  it('413 from the rows hint: the client hears the 400, and only the 400 is counted', async () => {
    const { s } = await startServed({
      inFeatures: IN,
      outFeatures: 3,
      open: true,
      admission: { requests: 4, units: UNITS },
    });
    const answer = await rawExchange(s.port, [malformedChunked(`/v1/linear?rows=${UNITS + 1}`)]);
    expect(answer.status).toBe(400);
    expect((JSON.parse(answer.body) as { code?: unknown }).code).toBe('OMNI_ERR_BAD_BODY');
    // Recorded once its response closed, long after the route decided the refusal.
    await until(async () => sample((await s.metrics.scrape()).text, posts(400)) === 1, 'the 400 recorded');
    const text = (await s.metrics.scrape()).text;
    // Before: 1, a 413 nobody heard.
    expect(sample(text, refused('too-large', 413))).toBeUndefined();
    expect(sample(text, CHUNK_ERRORS)).toBe(1);
    expect(sample(text, posts(413))).toBeUndefined();
  });

  it('503 while draining: the client hears the 400, and only the 400 is counted', async () => {
    const { g, s } = await startServed({ inFeatures: IN, outFeatures: 3 });
    const accepted = new Promise<Socket>((resolve) => s.app.server.once('connection', resolve));
    const { socket, heard } = listeningClient(s.port);
    await accepted;
    // A call held at the gate keeps the drain waiting while the connection above is still open.
    const holder = listeningClient(s.port);
    holder.socket.write(
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 16\r\n\r\n',
    );
    holder.socket.write(Buffer.alloc(16));
    await g.reach(ENTERED, 1);
    const drained = s.drain({ timeoutMs: 600_000 });
    socket.write(malformedChunked('/v1/linear'));
    await until(async () => sample((await s.metrics.scrape()).text, posts(400)) === 1, 'the 400 recorded');
    expect(heard()).toMatch(/^HTTP\/1\.1 400 /);
    g.open();
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
    const text = (await s.metrics.scrape()).text;
    // Before: 1, a 503 nobody heard.
    expect(sample(text, refused('unavailable', 503))).toBeUndefined();
    expect(sample(text, CHUNK_ERRORS)).toBe(1);
    expect(sample(text, posts(503))).toBeUndefined();
  });

  it('a 413 queued behind an earlier answer: its head written before its turn, heard and counted', async () => {
    const { g, s } = await startServed({
      inFeatures: IN,
      outFeatures: 3,
      admission: { requests: 4, units: UNITS },
    });
    const { socket, heard } = listeningClient(s.port);
    // The first call waits at the gate, so the refused request's answer waits behind its answer.
    const first =
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
      `Content-Length: ${IN * 4}\r\n\r\n${'\0'.repeat(IN * 4)}`;
    socket.write(first + malformedChunked(`/v1/linear?rows=${UNITS + 1}`));
    await g.reach(ENTERED, 1);
    await until(() => g.lr.report().rejected === 1, 'the second refused');
    g.open();
    const statuses = (): string[] => heard().match(/HTTP\/1\.1 \d{3} /g) ?? [];
    await until(() => statuses().length === 2, 'both answers heard');
    expect(statuses()).toEqual(['HTTP/1.1 200 ', 'HTTP/1.1 413 ']);
    await until(async () => sample((await s.metrics.scrape()).text, posts(413)) === 1, 'the 413 recorded');
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, refused('too-large', 413))).toBe(1);
    expect(sample(text, posts(400))).toBeUndefined();
  });
});
