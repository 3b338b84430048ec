/**
 * For host 'localhost' where it names several addresses (127.0.0.1 and ::1 where /etc/hosts
 * names both), fastify listens on the first with the port asked for (0: one the kernel
 * finds free there), then on the others with that same port, and ignores a failure there. A port
 * another program holds on ::1 then left the server on 127.0.0.1 alone, and a client whose
 * 'localhost' is ::1 first reached that other program instead. This finds such an address, so
 * that serve() can refuse the port as it refuses one taken on the first address (or, for port 0,
 * listen again on another). fastify does this for 'localhost' alone: node listens on the first
 * address of any other name, and the others were never tried, so none is missed.
 *
 * Throws: nothing; a failed lookup is no missed binding (fastify then binds the first alone too).
 */
import dns from 'node:dns';
import { isIPv4, Server as NetServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { listeningServers } from './listeners.js';

/** Listen errors that say the address cannot be listened on here at all (no IPv6, say): skipped, as fastify does. */
const UNUSABLE = new Set(['EADDRNOTAVAIL', 'EAFNOSUPPORT']);

/**
 * The listen error of an address `host` names that none of `app`'s servers listens on at `port`,
 * found by listening there again; undefined when every usable address is bound.
 */
export async function missedBinding(
  app: FastifyInstance,
  host: string,
  port: number,
): Promise<NodeJS.ErrnoException | undefined> {
  // fastify's own test (lib/server.js): no other name, an address or not, is bound more than once.
  if (host !== 'localhost') return undefined;
  const addresses = await new Promise<readonly dns.LookupAddress[]>((resolve) => {
    // The same lookup fastify made (dns.lookup read at call time, as fastify reads it).
    dns.lookup(host, { all: true }, (err, found) => resolve(err ? [] : found));
  });
  const bound = new Set(
    listeningServers(app).map((server) =>
      endpoint((server.address() as { address?: string } | null)?.address),
    ),
  );
  for (const { address } of addresses) {
    if (bound.has(endpoint(address))) continue;
    const error = await listenError(address, port);
    if (error === undefined || !UNUSABLE.has(error.code ?? '')) {
      // Free again by now: it was not when fastify tried, which left it unbound all the same.
      return error ?? inUse(address, port);
    }
  }
  return undefined;
}

/**
 * An IPv4-mapped IPv6 address (::ffff:127.0.0.1) is its IPv4 address's endpoint: listening there
 * fails EADDRINUSE while the server holds that address, though nothing else took the port.
 */
function endpoint(address: string | undefined): string | undefined {
  const v4 = address?.toLowerCase().startsWith('::ffff:') ? address.slice(7) : undefined;
  return v4 !== undefined && isIPv4(v4) ? v4 : address;
}

/** Why listening on address:port fails, or undefined once a listener was there (closed again). */
function listenError(address: string, port: number): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const probe = new NetServer();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err));
    probe.listen({ host: address, port, exclusive: true }, () => probe.close(() => resolve(undefined)));
  });
}

function inUse(address: string, port: number): NodeJS.ErrnoException {
  return Object.assign(new Error(`listen EADDRINUSE: address already in use ${address}:${port}`), {
    code: 'EADDRINUSE',
    syscall: 'listen',
    address,
    port,
  });
}
