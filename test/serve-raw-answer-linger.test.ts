/**
 * A routed request whose body node could not parse is answered 400 raw on its connection
 * (client-error.ts), which then lingers (linger.ts: up to 2 s for the client's own close). Its
 * answer is out once written: from then on it is no longer in flight, for the gauge and for a
 * drain, and its time ends there, whatever the connection's close still waits for.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, expect, it, vi } from 'vitest';
import type { ServeHandle } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { turns, until } from './fixtures/runtime-harness.js';
import { clients, closeServed, holdNextConnection, startServed } from './fixtures/serve-harness.js';

afterEach(async () => {
  vi.restoreAllMocks();
  await closeServed();
});

const series = (what: 'count' | 'sum', status: number): string =>
  `omni_http_request_duration_seconds_${what}{route="/v1/linear",method="POST",status="${status}"}`;

/** A client that does not answer the server's FIN with its own (half-open allowed). */
function halfOpenClient(s: ServeHandle): Socket {
  const c = connect({ host: '127.0.0.1', port: s.port, allowHalfOpen: true });
  clients.push(c);
  return c;
}

const FAILING_CHUNKED =
  'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
  `Transfer-Encoding: chunked\r\n\r\n10\r\n${'\0'.repeat(16)}\r\nQQ\r\n`;

/**
 * A client whose chunked body fails (not a chunk size) and that has heard the whole 400 and the
 * server's FIN, its own side still open: half-open allowed, it does not answer that FIN with its
 * own (as a node client otherwise does at once), so the connection lingers.
 */
async function answeredAndLingering(s: ServeHandle): Promise<Socket> {
  const c = halfOpenClient(s);
  let heard = '';
  c.on('data', (chunk: Buffer) => {
    heard += chunk.toString('latin1');
  });
  const ended = new Promise<void>((resolve) => c.once('end', () => resolve()));
  c.write(
    'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
      'Transfer-Encoding: chunked\r\n\r\n10\r\n',
  );
  c.write(Buffer.alloc(16));
  c.write('\r\nQQ\r\n');
  await ended;
  expect(heard).toMatch(/^HTTP\/1\.1 400 [\s\S]*"code":"OMNI_ERR_BAD_BODY"/);
  expect(c.writableEnded).toBe(false);
  return c;
}

it('a routed 400 heard by its client, its connection lingering: not in flight, the drain clean', async () => {
  const { s } = await startServed({ inFeatures: 4, outFeatures: 2, open: true });
  await answeredAndLingering(s);
  // Before: 1 in flight until the linger ended, and a drain whose timeout passed meanwhile
  // counted it abandoned ({ clean: false, abandonedRequests: 1 }).
  expect(sample((await s.metrics.scrape()).text, 'omni_http_inflight')).toBe(0);
  expect(await s.drain({ timeoutMs: 0 })).toEqual({ clean: true, abandonedRequests: 0 });
  // Recorded by the time the drain resolved (the drain closed the lingering connection).
  const text = (await s.metrics.scrape()).text;
  expect([sample(text, series('count', 400)), sample(text, series('count', 444))]).toEqual([1, undefined]);
  expect(sample(text, 'omni_http_client_errors_total{detail="HPE_INVALID_CHUNK_SIZE"}')).toBe(1);
});

it('its time ends when the 400 is out, not when the lingering connection closes', async () => {
  const { s } = await startServed({ inFeatures: 4, outFeatures: 2, open: true });
  // The clock the server times requests with (performance.now, fastify's and ours: one object)
  // stands still until the test moves it: the request takes no time up to its answer.
  let clock = performance.now();
  vi.spyOn(performance, 'now').mockImplementation(() => clock);
  const c = await answeredAndLingering(s);
  clock += 5_000;
  c.end();
  const recorded = async (): Promise<boolean> =>
    sample((await s.metrics.scrape()).text, series('count', 400)) === 1;
  await until(recorded, 'the 400 to be recorded as its connection closes');
  // Before: 5 s, the time the connection lingered after the answer.
  expect(sample((await s.metrics.scrape()).text, series('sum', 400))).toBe(0);
});

it('a drain that waits for a routed 400 held in this process ends once it is out, not once its connection stops lingering', async () => {
  const { g, s } = await startServed(
    { inFeatures: 4, outFeatures: 2, open: true },
    { sendTimeoutMs: Number.POSITIVE_INFINITY },
  );
  const held = holdNextConnection(s);
  halfOpenClient(s).write(FAILING_CHUNKED);
  const { connection, release } = await held;
  await until(() => connection.writableLength > 0, 'the 400 to be written');
  const drained = s.drain({ timeoutMs: Number.POSITIVE_INFINITY });
  await turns();
  expect(g.lr.runtime.state).toBe('ready');
  // The linger's own bound (LINGER_MS) on a fake clock, never due: the client never closes its
  // side, so only the 400 being out can end the drain's wait. Before: it waited for the close.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  try {
    release();
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
  } finally {
    vi.useRealTimers();
  }
});
