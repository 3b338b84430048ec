/**
 * omni_http_connections: the connections the server holds open, whether or not a request on them
 * is whole. A client that trickles its headers (slowloris), keeps a connection idle or lingers
 * after a closing answer holds the server without any request in flight: without this gauge an
 * operator saw none of it until the 408s came.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type ServeHandle, ServeMetrics } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { clients, closeServed, startServed } from './fixtures/serve-harness.js';

afterEach(closeServed);

const scraped = async (s: ServeHandle, series: string): Promise<number | undefined> =>
  sample((await s.metrics.scrape()).text, series);

async function opened(port: number): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port });
  clients.push(socket);
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  return socket;
}

describe('omni_http_connections', () => {
  it('counts connections with no request in flight (a head still arriving, an idle one) until they close', async () => {
    const { s } = await startServed({ inFeatures: 2, outFeatures: 2, open: true });
    expect(await scraped(s, 'omni_http_connections')).toBe(0);
    const slow = await opened(s.port);
    // Half a head: node has no request yet, nothing is in flight.
    slow.write('GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const idle = await opened(s.port);
    // Before: no such series (undefined): the two connections were nowhere in /metrics.
    await until(async () => (await scraped(s, 'omni_http_connections')) === 2, 'both connections counted');
    expect(await scraped(s, 'omni_http_inflight')).toBe(0);
    slow.destroy();
    idle.destroy();
    await until(async () => (await scraped(s, 'omni_http_connections')) === 0, 'both connections closed');
  });

  it('is 0 once a drain resolves: every connection it closed has left the gauge', async () => {
    const { s } = await startServed({ inFeatures: 2, outFeatures: 2, open: true });
    const slow = await opened(s.port);
    slow.write('GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const idle = await opened(s.port);
    idle.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(async () => (await scraped(s, 'omni_http_connections')) === 2, 'both connections counted');
    expect(await s.close()).toEqual({ clean: true, abandonedRequests: 0 });
    // Before: 2, as the drain resolved before node said 'close' to the connections it destroyed.
    expect(await scraped(s, 'omni_http_connections')).toBe(0);
  });

  it('a ServeMetrics of your own: the series only with connections(), which must be a function', () => {
    const report = (): never => {
      throw new Error('not scraped here');
    };
    const without = new ServeMetrics({ report, inflight: () => 0 });
    expect(without.registry.getSingleMetric('omni_http_connections')).toBeUndefined();
    const counted = new ServeMetrics({ report, inflight: () => 0, connections: () => 3 });
    expect(counted.registry.getSingleMetric('omni_http_connections')).toBeDefined();
    let code: unknown;
    try {
      new ServeMetrics({ report, inflight: () => 0, connections: 3 as unknown as () => number });
    } catch (err) {
      code = (err as { code?: unknown }).code;
    }
    expect(code).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it('connections() is read once, when the ServeMetrics is made, and called on its source', async () => {
    const report = (): never => {
      throw new Error('not scraped here');
    };
    let reads = 0;
    const source = {
      held: 5,
      report,
      inflight: () => 0,
      // A getter that answers a function once, then nothing: read again, the scrape would fail.
      get connections(): (() => number) | undefined {
        reads++;
        return reads === 1
          ? function (this: { held: number }): number {
              return this.held;
            }
          : undefined;
      },
    };
    const metrics = new ServeMetrics(source);
    const gauge = metrics.registry.getSingleMetric('omni_http_connections');
    expect((await gauge?.get())?.values[0]?.value).toBe(5);
    expect(reads).toBe(1);
  });
});
