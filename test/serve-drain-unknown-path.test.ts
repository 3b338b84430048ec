/**
 * A request for a path the server does not serve, arriving on a connection open before the
 * drain: its 404 comes at once, its body unread (the connection closes after any answer while
 * draining). Read first, as while serving, a client that stalled mid-upload held the drain for a
 * request that had no work, until the drain's timeout cut it off (444, the drain not clean: the
 * command's exit status 1). So did one whose body was still arriving when the drain began: its
 * 404 comes then.
 */
import { afterEach, expect, it } from 'vitest';
import type { ServeHandle } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { HELD_INPUT } from './fixtures/serve-gate-layout.js';
import { closeServed, listeningClient, startServed } from './fixtures/serve-harness.js';

afterEach(closeServed);

const IN = 4;

function post(path: string, type: string, length: number, body: Buffer, more = ''): Buffer {
  const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${length}\r\n${more}\r\n`;
  return Buffer.concat([Buffer.from(head), body]);
}

/** A request the server routed is in flight from then: its body is being read. */
async function inflight(s: ServeHandle): Promise<number | undefined> {
  return sample((await s.metrics.scrape()).text, 'omni_http_inflight');
}

const series = (route: string, status: number): string =>
  `omni_http_request_duration_seconds_count{route="${route}",method="POST",status="${status}"}`;

it.each([
  ['application/octet-stream', Buffer.alloc(16)],
  ['application/json', Buffer.from('{"rows":')],
])(
  'a stalled %s upload to an unknown path during a drain: 404 at once, the drain clean',
  async (type, part) => {
    const { g, s } = await startServed({ inFeatures: IN, outFeatures: 2, threads: 1, open: true });
    // Kept alive from before the drain, idle when it begins.
    const idle = listeningClient(s.port);
    idle.socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => idle.heard().includes('\r\n\r\n{'), 'the first answer');
    // A call the drain waits for, so that it is still waiting when the upload comes.
    const x = new Float32Array(IN);
    x[0] = HELD_INPUT;
    const caller = listeningClient(s.port);
    caller.socket.write(post('/v1/linear', 'application/octet-stream', x.byteLength, Buffer.from(x.buffer)));
    await until(() => g.entered() === 1, 'the call to be held');
    const drained = s.drain({ timeoutMs: 600_000 });
    idle.socket.write(post('/nowhere', type, 64, part));
    // Before: not answered until its body came; the drain waited for it to its timeout.
    await until(() => idle.heard().includes('HTTP/1.1 404'), 'the 404');
    expect(idle.heard()).toMatch(/\r\nconnection: close\r\n/i);
    expect(idle.heard()).toContain('"code":"OMNI_ERR_NOT_FOUND"');
    g.open();
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
    const text = (await s.metrics.scrape()).text;
    expect({
      notFound: sample(text, series('unmatched', 404)),
      cut: sample(text, series('unmatched', 444)),
      call: sample(text, series('/v1/linear', 200)),
    }).toEqual({ notFound: 1, cut: undefined, call: 1 });
  },
);

it.each([
  ['application/octet-stream', Buffer.alloc(16)],
  ['application/json', Buffer.from('{"rows":')],
])(
  'an upload (%s) to an unknown path stalled since before the drain: 404 once it begins, the drain clean',
  async (type, part) => {
    const { s } = await startServed({ inFeatures: IN, outFeatures: 2, threads: 1, open: true });
    const client = listeningClient(s.port);
    client.socket.write(post('/nowhere', type, 64, part));
    await until(async () => (await inflight(s)) === 1, 'the upload to be routed');
    const drained = s.drain({ timeoutMs: 600_000 });
    // Before: its 404 waited for a body that never came; the drain waited for it to its timeout.
    await until(() => client.heard().includes('HTTP/1.1 404'), 'the 404');
    expect(client.heard()).toMatch(/\r\nconnection: close\r\n/i);
    expect(client.heard()).toContain('"code":"OMNI_ERR_NOT_FOUND"');
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
    const text = (await s.metrics.scrape()).text;
    expect({
      notFound: sample(text, series('unmatched', 404)),
      cut: sample(text, series('unmatched', 444)),
      inflight: sample(text, 'omni_http_inflight'),
      connections: sample(text, 'omni_http_connections'),
    }).toEqual({ notFound: 1, cut: undefined, inflight: 0, connections: 0 });
  },
);

it('one pipelined behind a call the drain waits for: its 404 follows that answer, which keeps the connection', async () => {
  const { g, s } = await startServed({ inFeatures: IN, outFeatures: 2, threads: 1 });
  const x = new Float32Array(IN);
  x[0] = HELD_INPUT;
  const client = listeningClient(s.port);
  // The server closes the connection: the client has heard every byte once it ends.
  const ended = new Promise((resolve) => client.socket.once('end', resolve));
  client.socket.write(
    Buffer.concat([
      post('/v1/linear', 'application/octet-stream', x.byteLength, Buffer.from(x.buffer)),
      // Its 100 Continue waits for its turn, so its body never comes.
      post('/nowhere', 'application/json', 64, Buffer.alloc(0), 'Expect: 100-continue\r\n'),
    ]),
  );
  await until(() => g.entered() === 1, 'the call to be held');
  await until(async () => (await inflight(s)) === 2, 'the upload to be routed');
  const drained = s.drain({ timeoutMs: 600_000 });
  g.open();
  // Before: the 200 came, its 404 waited for the body; the drain waited for it to its timeout.
  await until(() => client.heard().includes('HTTP/1.1 404'), 'the 404');
  expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
  await ended;
  const heard = client.heard();
  expect(heard).not.toContain('100 Continue');
  expect(heard.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 404']);
  expect(heard.split('HTTP/1.1 404')[0]).not.toMatch(/connection: close/i);
  expect(heard.split('HTTP/1.1 404')[1]).toMatch(/\r\nconnection: close\r\n/i);
  const text = (await s.metrics.scrape()).text;
  expect({
    notFound: sample(text, series('unmatched', 404)),
    call: sample(text, series('/v1/linear', 200)),
    inflight: sample(text, 'omni_http_inflight'),
  }).toEqual({ notFound: 1, call: 1, inflight: 0 });
});
