/**
 * host 'localhost' where it names both loopbacks (127.0.0.1 and ::1, as in Docker's and many
 * distributions' /etc/hosts): fastify then listens on each. This machine's localhost is IPv4
 * only, so the lookup fastify makes for every address is answered with both here. A drain must
 * stop accepting on every address, and malformed HTTP and Expect: 100-continue are answered the
 * same on every address.
 */
import dns from 'node:dns';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ServeHandle, serve } from '../src/serve/index.js';
import { postFloats } from './fixtures/serve-client.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import { type Gated, startGated } from './fixtures/serve-harness.js';

const BOTH = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

const hasIpv6Loopback = Object.values(networkInterfaces()).some((list) =>
  list?.some((a) => a.internal && a.family === 'IPv6' && a.address === '::1'),
);

const lookup = dns.lookup;
const gates: Gated[] = [];
const servers: ServeHandle[] = [];

beforeEach(() => {
  // Only the all-addresses lookup of 'localhost' changes; node's own listen still gets 127.0.0.1.
  dns.lookup = ((host: string, options: unknown, callback?: unknown) => {
    const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
    if (host === 'localhost' && all && typeof callback === 'function') {
      process.nextTick(callback as (err: null, addresses: typeof BOTH) => void, null, BOTH);
      return;
    }
    return (lookup as (...args: unknown[]) => void)(host, options, callback);
  }) as typeof dns.lookup;
});

afterEach(async () => {
  dns.lookup = lookup;
  for (const g of gates.splice(0)) g.open();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function tryConnect(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
}

async function start(): Promise<{ g: Gated; s: ServeHandle }> {
  const g = await startGated({ inFeatures: 4, outFeatures: 2, admission: { requests: 2 } });
  gates.push(g);
  const s = await serve(g.lr, { host: 'localhost', port: 0 });
  servers.push(s);
  return { g, s };
}

/** Writes `text` to a fresh connection to `host` and returns everything heard until it closes. */
function exchange(host: string, port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (err) => {
      if (chunks.length === 0) reject(err);
    });
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('connect', () => socket.write(text));
  });
}

describe.skipIf(!hasIpv6Loopback)("host 'localhost' on both loopbacks", () => {
  it.each(['127.0.0.1', '::1'])(
    'malformed HTTP, an unsupported Expect and a CONNECT on %s: a JSON answer with its code',
    async (host) => {
      const { s } = await start();
      const bad = await exchange(host, s.port, 'NOT-HTTP\r\n\r\n');
      expect(bad).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(bad.slice(bad.indexOf('\r\n\r\n') + 4))).toMatchObject({
        code: 'OMNI_ERR_BAD_REQUEST',
      });
      const expectation = await exchange(
        host,
        s.port,
        'GET /health HTTP/1.1\r\nHost: x\r\nExpect: nothing\r\nConnection: close\r\n\r\n',
      );
      expect(expectation).toMatch(/^HTTP\/1\.1 417 /);
      expect(JSON.parse(expectation.slice(expectation.indexOf('\r\n\r\n') + 4))).toMatchObject({
        code: 'OMNI_ERR_EXPECTATION_FAILED',
      });
      const tunnel = await exchange(host, s.port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(tunnel).toMatch(/^HTTP\/1\.1 501 /);
      expect(JSON.parse(tunnel.slice(tunnel.indexOf('\r\n\r\n') + 4))).toMatchObject({
        code: 'OMNI_ERR_NOT_IMPLEMENTED',
      });
    },
  );

  it.each(['127.0.0.1', '::1'])(
    'a request refused before its body is read on %s hears no 100 Continue first',
    async (host) => {
      const { s } = await start();
      // The body is never sent: a 100 Continue would have asked for it only to refuse it.
      const refused = await exchange(
        host,
        s.port,
        'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 16\r\n' +
          'Expect: 100-continue\r\n\r\n',
      );
      expect(refused).toMatch(/^HTTP\/1\.1 415 /);
    },
  );

  it.each(['127.0.0.1', '::1'])(
    'a request asking to upgrade the protocol on %s is answered as any other',
    async (host) => {
      const { g, s } = await start();
      g.open();
      // fastify forwarded the other addresses' 'upgrade' to the main server, which has no
      // listener: node handed such a request over to it, and nobody ever answered (before:
      // this exchange never ended on ::1).
      const answer = await exchange(
        host,
        s.port,
        'GET /health HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\n\r\n',
      );
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    },
    10_000,
  );

  it('a drain stops accepting connections on every address', async () => {
    const { g, s } = await start();
    expect(await tryConnect('127.0.0.1', s.port)).toBe('connected');
    expect(await tryConnect('::1', s.port)).toBe('connected');
    // Held in flight, so the drain is still waiting when the connections are tried.
    const inflight = postFloats(`http://127.0.0.1:${s.port}`, [1, 2, 3, 4]);
    await g.reach(ENTERED, 1);
    const drained = s.drain();
    expect(await tryConnect('127.0.0.1', s.port)).toBe('ECONNREFUSED');
    expect(await tryConnect('::1', s.port)).toBe('ECONNREFUSED');
    g.open();
    expect((await inflight).status).toBe(200);
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
  });
});
