/**
 * host 'localhost' where it names both loopbacks (127.0.0.1 and ::1, as in Docker's and many
 * distributions' /etc/hosts): fastify then listens on each. This machine's localhost is IPv4
 * only, so the lookup fastify makes for every address is answered with both here. A drain must
 * stop accepting on every address, and malformed HTTP and Expect: 100-continue are answered the
 * same on every address.
 */
import dns from 'node:dns';
import { type AddressInfo, connect, createServer, Server as NetServer, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import { type ServeHandle, serve } from '../src/serve/index.js';
import { listeningServers } from '../src/serve/listeners.js';
import { nodeAtLeast } from './fixtures/node-version.js';
import { until } from './fixtures/runtime-harness.js';
import { type Answer, get, postFloats } from './fixtures/serve-client.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import {
  clients,
  closeServed,
  type Gated,
  gatedForTest,
  serveForTest,
  servers,
  startServed,
} from './fixtures/serve-harness.js';

const BOTH = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

const hasIpv6Loopback = Object.values(networkInterfaces()).some((list) =>
  list?.some((a) => a.internal && a.family === 'IPv6' && a.address === '::1'),
);

const lookup = dns.lookup;
/** node's own listen, for calls a test's injected failure lets through (taken before any spy). */
const nodeListen = NetServer.prototype.listen;
const squatters: NetServer[] = [];
/** What the all-addresses lookup of 'localhost' answers (BOTH unless a test says otherwise). */
let addressesOfLocalhost = BOTH;
/**
 * Run (once) by the next all-addresses lookup of 'localhost' before it answers, with the port of
 * the server listening last: fastify makes that lookup once its main server listens on
 * 127.0.0.1, and binds the other addresses after it.
 */
let beforeOthersBind: ((port: number) => Promise<unknown>) | undefined;
/** Every server that listen() was called on since this test began. */
let listen: MockInstance<NetServer['listen']>;
/** How many all-addresses lookups of 'localhost' node's own listen made (byNodesListen). */
let nodesLookups = 0;

/**
 * Whether this lookup is the one node's listen makes of the name it was given: node 22.8+ looks
 * up all its addresses to pick its first (nodejs/node#54264), node 20 one address. It is not
 * fastify's nor serve's, which come once a server listens (or its listen failed).
 */
function byNodesListen(): boolean {
  const server = listen.mock.contexts.at(-1) as NetServer | undefined;
  const options = listen.mock.calls.at(-1)?.[0] as { host?: unknown } | null | undefined;
  return server?.listening === false && typeof options === 'object' && options?.host === 'localhost';
}

beforeEach(() => {
  listen = vi.spyOn(NetServer.prototype, 'listen');
  nodesLookups = 0;
  // Only the all-addresses lookup of 'localhost' changes; node's own listen still gets 127.0.0.1
  // (node 20 looks one address up, node 22.8+ all of them: every list here starts with it).
  dns.lookup = ((host: string, options: unknown, callback?: unknown) => {
    const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
    if (host === 'localhost' && all && typeof callback === 'function') {
      const answer = (): void =>
        (callback as (err: null, addresses: typeof BOTH) => void)(null, addressesOfLocalhost);
      if (byNodesListen()) {
        nodesLookups++;
        process.nextTick(answer);
        return;
      }
      const hook = beforeOthersBind;
      beforeOthersBind = undefined;
      if (hook === undefined) {
        process.nextTick(answer);
        return;
      }
      const main = (listen.mock.contexts as NetServer[]).filter((server) => server.listening).at(-1)!;
      void hook((main.address() as AddressInfo).port).then(answer);
      return;
    }
    return (lookup as (...args: unknown[]) => void)(host, options, callback);
  }) as typeof dns.lookup;
});

/** serve() on host 'localhost': its listen error, or undefined (the server is closed after the test). */
function serveOrError(g: Gated, port: number): Promise<NodeJS.ErrnoException | undefined> {
  return serve(g.lr, { host: 'localhost', port }).then(
    (s) => {
      servers.push(s);
      return undefined;
    },
    (err: NodeJS.ErrnoException) => err,
  );
}

afterEach(async () => {
  dns.lookup = lookup;
  addressesOfLocalhost = BOTH;
  beforeOthersBind = undefined;
  vi.restoreAllMocks();
  await closeServed();
  await Promise.all(
    squatters.splice(0).map((q) => new Promise((resolve) => q.close(() => resolve(undefined)))),
  );
});

/**
 * Another program's listener on [::1]:port (0: a port the kernel picks), which closes every
 * connection unanswered; resolves with its port, taken on ::1 either way (by it, or already).
 */
async function squat(port: number): Promise<number> {
  const squatter = createServer((socket) => socket.destroy());
  squatters.push(squatter);
  return new Promise((resolve) => {
    squatter.once('error', () => resolve(port));
    squatter.listen({ host: '::1', port }, () => resolve((squatter.address() as AddressInfo).port));
  });
}

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
  return startServed({ inFeatures: 4, outFeatures: 2, admission: { requests: 2 } }, { host: 'localhost' });
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
    'more than 1,000 header lines on %s: the 431 serve answers itself, counted with its route',
    async (host) => {
      const { s } = await start();
      // Short lines, within node's 16 KiB: only the count refuses them. On node's own count (on
      // since 22.23.2, 24.18.1, 26.5.1) its parser answered first, as a client error.
      const lines = Array.from({ length: 1_000 }, () => 'a:').join('\r\n');
      const refused = await exchange(
        host,
        s.port,
        `GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${lines}\r\n\r\n`,
      );
      expect(refused).toMatch(/^HTTP\/1\.1 431 /);
      expect(JSON.parse(refused.slice(refused.indexOf('\r\n\r\n') + 4))).toMatchObject({
        code: 'OMNI_ERR_HEADERS_TOO_LARGE',
      });
      const text = (await s.metrics.scrape()).text;
      expect(text).toContain(
        'omni_http_request_duration_seconds_count{route="/health",method="GET",status="431"} 1',
      );
      expect(text).not.toContain('omni_http_client_errors_total{');
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
    'a request pipelined after an answer that closes the connection on %s never runs',
    async (host) => {
      const { g, s } = await start();
      g.open();
      const post = Buffer.from(new Float32Array([1, 2, 3, 4]).buffer).toString('latin1');
      // One write: node holds the 405's unread body and the POST after it when the 405 goes out.
      const heard = await exchange(
        host,
        s.port,
        'PUT /health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcde' +
          'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
          `Content-Length: ${post.length}\r\n\r\n${post}`,
      );
      expect([...heard.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1])).toEqual(['405']);
      // Routed, the POST would be in flight until its response closed; none left, none ran.
      await until(
        async () => /^omni_http_inflight 0$/m.test((await s.metrics.scrape()).text),
        'none in flight',
      );
      expect(g.entered()).toBe(0);
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
  );

  it.each(['127.0.0.1', '::1'])(
    'a connection held open on %s is counted in omni_http_connections until it closes',
    async (host) => {
      const { s } = await start();
      const connections = async (): Promise<string | undefined> =>
        /^omni_http_connections (\S+)$/m.exec((await s.metrics.scrape()).text)?.[1];
      const socket = connect({ host, port: s.port });
      clients.push(socket);
      socket.on('error', () => {});
      await until(async () => (await connections()) === '1', 'the connection counted');
      socket.destroy();
      await until(async () => (await connections()) === '0', 'the connection closed');
    },
  );

  it('a request asking to upgrade on ::1 while serve() still checks its addresses: answered, not leaked', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, open: true });
    let heard = '';
    let client: Socket | undefined;
    let connection: Socket | undefined;
    // serve's own lookup (after fastify's, which binds ::1) waits for the request to be read on
    // ::1: fastify forwards that address's 'upgrade' to the main server until serve() takes the
    // forwarder off.
    beforeOthersBind = async () => {
      beforeOthersBind = async (port) => {
        const servers = (listen.mock.contexts as NetServer[]).filter((server) => server.listening);
        const main = servers.find((server) => (server.address() as AddressInfo).address === '127.0.0.1')!;
        const other = servers.find((server) => (server.address() as AddressInfo).address === '::1')!;
        const read = new Promise<void>((resolve) => {
          other.prependListener('request', () => resolve());
          // Where fastify's forwarder hands it (the main server has no listener of its own).
          main.on('upgrade', () => resolve());
        });
        other.once('connection', (socket: Socket) => {
          connection = socket;
        });
        client = connect({ host: '::1', port });
        clients.push(client);
        client.on('error', () => {});
        client.on('data', (chunk: Buffer) => {
          heard += chunk.toString('latin1');
        });
        client.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
        await read;
      };
    };
    const s = await serveForTest(g.lr, { host: 'localhost' });
    const closed = new Promise<void>((resolve) => client!.once('close', () => resolve()));
    expect(await s.close()).toEqual({ clean: true, abandonedRequests: 0 });
    // Before: node had handed the connection over to nobody: never answered, and not one the
    // drain closes (held until the client left).
    expect(connection?.destroyed).toBe(true);
    await closed;
    expect(heard).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('port 0 taken on ::1 by another program once 127.0.0.1 listens: serve listens on a port free on both', async () => {
    let taken: number | undefined;
    beforeOthersBind = (port) => {
      taken = port;
      return squat(port);
    };
    const { g, s } = await start();
    g.open();
    // Before: serve listened on 127.0.0.1 alone, and a client whose 'localhost' is ::1 reached
    // the other program at the port it was given.
    expect(taken).toBeDefined();
    expect(s.port).not.toBe(taken);
    expect(listeningServers(s.app)).toHaveLength(2);
    for (const host of ['127.0.0.1', '::1']) {
      expect(
        await exchange(host, s.port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      ).toMatch(/^HTTP\/1\.1 200 /);
    }
  });

  it('a port taken on ::1 by another program: EADDRINUSE, as on 127.0.0.1, and nothing listens', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, admission: { requests: 2 } });
    const port = await squat(0);
    const failure = await serveOrError(g, port);
    // Before: serve resolved, listening on 127.0.0.1 alone.
    expect(failure?.code).toBe('EADDRINUSE');
    // Refused at once: only port 0 picks again (a port given would have been bound 8 times).
    const tries = listen.mock.calls.filter(
      ([o]) => typeof o === 'object' && o.host === 'localhost' && o.port === port,
    );
    expect(tries).toHaveLength(1);
    const made = (listen.mock.contexts as NetServer[]).filter((server) => !squatters.includes(server));
    expect(made.length).toBeGreaterThan(0);
    expect(made.filter((server) => server.listening)).toEqual([]);
    // The runtime is still the caller's, as after any listen error.
    expect(g.lr.report().state).toBe('ready');
  });

  it('a port held on ::1 as fastify bound, free again when serve checks: still EADDRINUSE', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, admission: { requests: 2 } });
    const port = await squat(0);
    const squatter = squatters.at(-1)!;
    // fastify's lookup comes first (it then misses ::1); the other program leaves during serve's.
    beforeOthersBind = async () => {
      beforeOthersBind = () => new Promise((resolve) => squatter.close(resolve));
    };
    const failure = await serveOrError(g, port);
    // Found free, ::1 was taken as bound: serve resolved on 127.0.0.1 alone.
    expect(failure?.code).toBe('EADDRINUSE');
    expect(squatter.listening).toBe(false);
  });

  it('a port taken on ::1: a request that reached 127.0.0.1 before the refusal is answered 503, and never runs', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, admission: { requests: 2 } });
    g.open();
    const port = await squat(0);
    // serve's own lookup (the second: fastify's binds the others) answers only once a request on
    // 127.0.0.1 has reached the server that is about to be refused.
    let lookups = 0;
    let answered: Promise<Answer> | undefined;
    let health: Promise<Answer> | undefined;
    const inner = dns.lookup;
    dns.lookup = ((host: string, options: unknown, callback?: unknown) => {
      const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
      if (host === 'localhost' && all && !byNodesListen() && ++lookups === 2) {
        const main = (listen.mock.contexts as NetServer[]).find(
          (server) => server.listening && (server.address() as AddressInfo).address === '127.0.0.1',
        )!;
        const heard = new Promise<void>((resolve) => {
          let requests = 0;
          main.on('request', () => {
            if (++requests === 2) resolve();
          });
        });
        answered = postFloats(`http://127.0.0.1:${port}`, [1, 2, 3, 4]);
        // A request read whole (no body): its 503 alone must close its connection.
        health = get(`http://127.0.0.1:${port}`, '/health');
        void heard.then(() => (inner as (...args: unknown[]) => void)(host, options, callback));
        return;
      }
      return (inner as (...args: unknown[]) => void)(host, options, callback);
    }) as typeof dns.lookup;
    const failure = await serveOrError(g, port);
    expect(failure?.code).toBe('EADDRINUSE');
    // Before: the server being refused served it (200), on the runtime serve() hands back
    // untouched; a call held there kept serve() from settling at all.
    const answer = await answered!;
    expect(answer.status).toBe(503);
    expect(answer.json).toMatchObject({ code: 'OMNI_ERR_UNAVAILABLE' });
    // Kept alive, the connection would outlive the server torn down under it.
    const refused = await health!;
    expect([refused.status, refused.headers.get('connection')]).toEqual([503, 'close']);
    expect(g.lr.report()).toMatchObject({ state: 'ready', depth: 0, completed: 0 });
  });

  it('an IPv4-mapped address of one it listens on (::ffff:127.0.0.1) is that address, not a port taken', async () => {
    // Listening there fails EADDRINUSE: the same endpoint as 127.0.0.1, which this server holds.
    addressesOfLocalhost = [BOTH[0]!, { address: '::ffff:127.0.0.1', family: 6 }];
    // Before: every attempt called the port taken there (EADDRINUSE after 8 tries for port 0).
    const { g, s } = await start();
    g.open();
    expect(listeningServers(s.app)).toHaveLength(1);
    expect(
      await exchange(
        '::ffff:127.0.0.1',
        s.port,
        'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      ),
    ).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('a drain stops accepting connections on every address', async () => {
    const { g, s } = await start();
    expect(await tryConnect('127.0.0.1', s.port)).toBe('connected');
    expect(await tryConnect('::1', s.port)).toBe('connected');
    // Held in flight, so the drain is still waiting when the connections are tried.
    const inflight = postFloats(`http://127.0.0.1:${s.port}`, [1, 2, 3, 4]);
    await g.reach(ENTERED, 1);
    // Not the default 10 s: a machine stalled that long must not abandon the request.
    const drained = s.drain({ timeoutMs: 600_000 });
    expect(await tryConnect('127.0.0.1', s.port)).toBe('ECONNREFUSED');
    expect(await tryConnect('::1', s.port)).toBe('ECONNREFUSED');
    g.open();
    expect((await inflight).status).toBe(200);
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
  });
});

describe("host 'localhost' naming two IPv4 loopbacks (127.0.0.2: all of 127/8 is loopback)", () => {
  it('"port 0 picks one free on all of them (8 picks, then EADDRINUSE)": each pick taken on the other', async () => {
    addressesOfLocalhost = [BOTH[0]!, { address: '127.0.0.2', family: 4 }];
    // Another program takes every port picked, on 127.0.0.2, before the server binds there (or
    // finds it taken already: this sandbox's loopback shares one port space across 127/8).
    const takeOnOther = (port: number): Promise<void> => {
      beforeOthersBind = takeOnOther;
      const squatter = createServer((socket) => socket.destroy());
      squatters.push(squatter);
      return new Promise((resolve) => {
        squatter.once('error', () => resolve());
        squatter.listen({ host: '127.0.0.2', port }, () => resolve());
      });
    };
    beforeOthersBind = takeOnOther;
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, admission: { requests: 2 } });
    const failure = await serveOrError(g, 0);
    expect(failure?.code).toBe('EADDRINUSE');
    // One listen on port 0 a pick.
    const picks = listen.mock.calls.filter(
      ([o]) => typeof o === 'object' && o.host === 'localhost' && o.port === 0,
    );
    expect(picks).toHaveLength(8);
    // Nothing of this server is left listening: only the other program's listeners are.
    const made = (listen.mock.contexts as NetServer[]).filter((server) => !squatters.includes(server));
    expect(made.filter((server) => server.listening)).toEqual([]);
  });
});

describe("host 'localhost' naming an address that is not this machine's", () => {
  it('that address is skipped (it cannot be listened on here), not refused: serve listens on the others', async () => {
    // 192.0.2.1 (TEST-NET-1) is no address of this machine: listening there fails EADDRNOTAVAIL,
    // as on ::1 where IPv6 is off.
    addressesOfLocalhost = [BOTH[0]!, { address: '192.0.2.1', family: 4 }];
    const { g, s } = await start();
    g.open();
    expect(listeningServers(s.app)).toHaveLength(1);
    expect(
      await exchange('127.0.0.1', s.port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    ).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe("host 'localhost' naming an address of a family this machine lacks", () => {
  it('that address is skipped (listening there fails EAFNOSUPPORT), not refused: serve listens on the others', async () => {
    // What listening on ::1 fails with where the kernel has no IPv6 at all; injected, as this
    // machine has IPv6, for fastify's listen and serve's probe alike.
    const missing = '2001:db8::1';
    addressesOfLocalhost = [BOTH[0]!, { address: missing, family: 6 }];
    let refusals = 0;
    listen.mockImplementation(function (this: NetServer, ...args: unknown[]) {
      const options = args[0] as { host?: unknown } | null | undefined;
      if (typeof options !== 'object' || options?.host !== missing) {
        return (nodeListen as (...a: unknown[]) => NetServer).apply(this, args);
      }
      refusals++;
      const err = Object.assign(new Error(`listen EAFNOSUPPORT: address family not supported ${missing}`), {
        code: 'EAFNOSUPPORT',
        syscall: 'listen',
      });
      process.nextTick(() => this.emit('error', err));
      return this;
    } as NetServer['listen']);
    const { g, s } = await start();
    g.open();
    expect(refusals).toBe(2); // fastify's listen there, then serve's own check
    expect(listeningServers(s.app)).toHaveLength(1);
    expect(
      await exchange('127.0.0.1', s.port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    ).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe("host 'localhost' whose second lookup fails", () => {
  it('is no missed binding: serve listens on what fastify bound', async () => {
    addressesOfLocalhost = [BOTH[0]!];
    let lookups = 0;
    const inner = dns.lookup;
    dns.lookup = ((host: string, options: unknown, callback?: unknown) => {
      const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
      if (host === 'localhost' && all && !byNodesListen() && ++lookups === 2) {
        const failed = Object.assign(new Error('lookup failed'), { code: 'ENOTFOUND' });
        process.nextTick(callback as (err: Error) => void, failed);
        return;
      }
      return (inner as (...args: unknown[]) => void)(host, options, callback);
    }) as typeof dns.lookup;
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, admission: { requests: 2 } });
    // Its error read as a list of addresses, serve rejected with an uncoded TypeError.
    const s = await serveForTest(g.lr, { host: 'localhost' });
    g.open();
    expect(lookups).toBe(2);
    // Node 22.8+'s listen looks 'localhost' up with all its addresses too, node 20's one address.
    expect(nodesLookups).toBe(nodeAtLeast(22, 8) ? 1 : 0);
    expect(
      await exchange('127.0.0.1', s.port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    ).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe("a host name other than 'localhost' that names several addresses", () => {
  it('is listened on at its first address alone, as fastify does, not refused for the others', async () => {
    // fastify listens on every address of 'localhost' alone; node listens on the first address
    // of any other name. 127.0.0.2 is this machine's (all of 127/8 is loopback) and free.
    const name = 'omni-two-addresses.test';
    const two = [BOTH[0]!, { address: '127.0.0.2', family: 4 }];
    const inner = dns.lookup;
    dns.lookup = ((host: string, options: unknown, callback?: unknown) => {
      if (host !== name) return (inner as (...args: unknown[]) => void)(host, options, callback);
      const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
      const done = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
      if (all) process.nextTick(done, null, two);
      else process.nextTick(done, null, two[0]!.address, 4);
    }) as typeof dns.lookup;
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, admission: { requests: 2 } });
    // Before: every attempt found 127.0.0.2 unbound, free, and called it taken (EADDRINUSE).
    const s = await serveForTest(g.lr, { host: name });
    g.open();
    expect(s.host).toBe('127.0.0.1');
    expect(listeningServers(s.app)).toHaveLength(1);
    expect(
      await exchange('127.0.0.1', s.port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    ).toMatch(/^HTTP\/1\.1 200 /);
  });
});
