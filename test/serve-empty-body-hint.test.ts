/**
 * An empty body (Content-Length: 0, or none at all) with a rows hint: the handler answers it
 * 400 whatever the hint says (decodeLinearBody, or fastify's empty-JSON check), before any
 * admission. The refusal from headers (linear-route.ts) leaves it to the handler; before, a hint
 * over --units was refused 413 OMNI_ERR_TOO_LARGE there and counted as a refusal (the runtime's
 * refused and rejected, omni_http_refused_total), while the same empty body with a hint that fits
 * was the handler's 400, counted nowhere.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { sample } from './fixtures/metrics-text.js';
import { rawExchange } from './fixtures/serve-client.js';
import { sharedServed } from './fixtures/serve-harness.js';

const UNITS = 8;

const shared = sharedServed({
  inFeatures: 4,
  outFeatures: 2,
  open: true,
  admission: { requests: 4, units: UNITS },
});
afterAll(shared.close);

const EMPTY = [
  ['an octet-stream Content-Length: 0', 'application/octet-stream', 'Content-Length: 0\r\n'],
  ['an octet-stream with no body at all', 'application/octet-stream', ''],
  ['a JSON Content-Length: 0', 'application/json', 'Content-Length: 0\r\n'],
  // node takes an empty Transfer-Encoding for none: no body, the next request read after it.
  ['an octet-stream with an empty Transfer-Encoding', 'application/octet-stream', 'Transfer-Encoding:\r\n'],
] as const;

async function exchange(port: number, rows: number, type: string, length: string) {
  const answer = await rawExchange(port, [
    `POST /v1/linear?rows=${rows} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\n${length}` +
      'Connection: close\r\n\r\n',
  ]);
  return { status: answer.status, code: (JSON.parse(answer.body) as { code?: unknown }).code };
}

describe('an empty body with a rows hint', () => {
  it.each(EMPTY)("%s: the handler's 400 over --units too, counted nowhere", async (_name, type, length) => {
    const { g, s } = await shared();
    // The reference: a hint that fits, which the handler has always answered.
    const fits = await exchange(s.port, 1, type, length);
    expect(fits.status).toBe(400);
    const before = g.lr.report();
    const over = await exchange(s.port, UNITS + 1, type, length);
    const after = g.lr.report();
    expect(over).toEqual(fits);
    expect({ refused: after.refused - before.refused, rejected: after.rejected - before.rejected }).toEqual({
      refused: 0,
      rejected: 0,
    });
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, 'omni_http_refused_total{reason="too-large",status="413"}')).toBeUndefined();
    expect(g.entered()).toBe(0);
  });
});

describe('an empty Transfer-Encoding (no body) with a rows hint', () => {
  it("past what the body limit can hold: the handler's 400, not the 413 of a chunked body", async () => {
    const { s } = await shared();
    const fits = await exchange(s.port, 1, 'application/octet-stream', 'Transfer-Encoding:\r\n');
    expect(fits.status).toBe(400);
    // More rows of 4 floats than the default 8 MiB body limit holds.
    const over = await exchange(s.port, 2 ** 20, 'application/octet-stream', 'Transfer-Encoding:\r\n');
    expect(over).toEqual(fits);
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, 'omni_http_refused_total{reason="body-too-large",status="413"}')).toBeUndefined();
  });
});
