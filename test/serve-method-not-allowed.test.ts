/**
 * A path the server serves, asked with a method none of its routes takes: 405 with an Allow
 * header and the server's JSON error body (OMNI_ERR_METHOD_NOT_ALLOWED), recorded under its route
 * in the latency histogram; refused before its body is read, and before any work. HEAD is
 * answered wherever GET is (fastify's head routes). An unknown path stays a 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeHandle, serve } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { pipelinedExchange, rawExchange } from './fixtures/serve-client.js';
import { type Gated, startGated } from './fixtures/serve-harness.js';

let g: Gated;
let s: ServeHandle;

beforeAll(async () => {
  g = await startGated({ inFeatures: 2, outFeatures: 2, threads: 1, open: true, admission: { requests: 2 } });
  s = await serve(g.lr, { port: 0 });
});

afterAll(async () => {
  await s.close();
});

interface Exchange {
  readonly status: number;
  readonly allow: string | undefined;
  readonly connection: string | undefined;
  readonly type: string | undefined;
  readonly body: string;
}

/** One request on its own connection, the server's answer read until it closes it. */
async function exchange(method: string, path: string, extra = ''): Promise<Exchange> {
  const answer = await rawExchange(
    s.port,
    [`${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${extra}\r\n`],
    false,
  );
  const header = (name: string): string | undefined =>
    new RegExp(`\\r\\n${name}: ([^\\r]*)`, 'i').exec(answer.head)?.[1];
  return {
    status: answer.status,
    allow: header('allow'),
    connection: header('connection'),
    type: header('content-type'),
    body: answer.body,
  };
}

describe('405 Method Not Allowed', () => {
  it.each([
    ['GET', '/v1/linear', 'POST'],
    ['DELETE', '/v1/linear', 'POST'],
    ['OPTIONS', '/v1/linear', 'POST'],
    ['POST', '/health', 'GET, HEAD'],
    ['PUT', '/health', 'GET, HEAD'],
    ['POST', '/metrics', 'GET, HEAD'],
    ['PATCH', '/metrics', 'GET, HEAD'],
    // fastify's router decodes the path: the route's own path, so its 405.
    ['GET', '/v1/%6Cinear', 'POST'],
  ])('%s %s: 405, Allow: %s, the coded JSON body', async (method, path, allow) => {
    const before = g.entered();
    const answer = await exchange(method, path);
    expect(answer.status).toBe(405);
    expect(answer.allow).toBe(allow);
    expect(answer.type).toMatch(/^application\/json/);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'OMNI_ERR_METHOD_NOT_ALLOWED' });
    expect(g.entered()).toBe(before);
  });

  it('HEAD /v1/linear: 405 with Allow: POST and no body', async () => {
    const answer = await exchange('HEAD', '/v1/linear');
    expect([answer.status, answer.allow, answer.body]).toEqual([405, 'POST', '']);
  });

  it('HEAD where GET is served: 200, as fastify answers it from the GET route', async () => {
    for (const path of ['/health', '/metrics']) {
      const answer = await exchange('HEAD', path);
      expect([path, answer.status, answer.body]).toEqual([path, 200, '']);
    }
  });

  it('an unknown path is still a 404, whatever the method', async () => {
    for (const [method, path] of [
      ['GET', '/v2/none'],
      ['POST', '/v1/linear/'],
      ['DELETE', '/nothing'],
    ] as const) {
      const answer = await exchange(method, path);
      expect([method, path, answer.status, JSON.parse(answer.body).code]).toEqual([
        method,
        path,
        404,
        'OMNI_ERR_NOT_FOUND',
      ]);
    }
  });

  it.each([
    ['text/plain', 'no 415 for a body it would not parse'],
    ['application/json', 'no 100 Continue for a body it would parse'],
  ])('a body sent with the wrong method is never read (%s: %s)', async (type) => {
    const heard = await pipelinedExchange(
      s.port,
      Buffer.from(
        `PUT /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: 16\r\n` +
          'Expect: 100-continue\r\n\r\n',
      ),
      1,
    );
    // A 100 Continue would ask the client to upload a body nobody reads.
    expect(heard.statuses).toEqual([405]);
  });

  it('recorded in the latency histogram under its route and method, not as a refusal', async () => {
    const before = (await s.metrics.scrape()).text;
    const series = 'omni_http_request_duration_seconds_count{route="/v1/linear",method="GET",status="405"}';
    const had = sample(before, series) ?? 0;
    expect((await exchange('GET', '/v1/linear')).status).toBe(405);
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, series)).toBe(had + 1);
    expect(text).not.toMatch(/omni_http_refused_total\{[^}]*status="405"/);
    expect(text).not.toContain('route="unmatched",method="GET",status="405"');
  });
});
