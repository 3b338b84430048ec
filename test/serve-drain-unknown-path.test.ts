/**
 * A request for a path the server does not serve, arriving on a connection open before the
 * drain: its 404 comes at once, its body unread (the connection closes after any answer while
 * draining). Read first, as while serving, a client that stalled mid-upload held the drain for a
 * request that had no work, until the drain's timeout cut it off (444, the drain not clean: the
 * command's exit status 1).
 */
import { afterEach, expect, it } from 'vitest';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { HELD_INPUT } from './fixtures/serve-gate-layout.js';
import { closeServed, listeningClient, startServed } from './fixtures/serve-harness.js';

afterEach(closeServed);

const IN = 4;

function post(path: string, type: string, length: number, body: Buffer): Buffer {
  const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), body]);
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
