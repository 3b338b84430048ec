/**
 * `Expect: 100-continue`: the client uploads its body only once the server says 100 Continue.
 * node says it at once unless a server listens for 'checkContinue', so a request refused before
 * its body is read (draining, compressed, another media type, over the body limit) had it
 * uploaded for nothing. Here the 100 is sent from a preParsing hook: after routing and the
 * route's onRequest checks, and only for a body this server would go on to read.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { OCTET_STREAM } from './body.js';

const READ_TYPES = new Set([OCTET_STREAM, 'application/json']);

/** A server 'checkContinue' listener: the request goes on as any other, without the 100. */
export function deferContinue(this: Server, req: IncomingMessage, res: ServerResponse): void {
  this.emit('request', req, res);
}

function readable(request: FastifyRequest, bodyLimit: number): boolean {
  if (request.routeOptions.url === undefined) return false; // a 404 reads no body
  const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (type === undefined || !READ_TYPES.has(type)) return false;
  const length = request.headers['content-length'];
  return length === undefined || Number(length) <= bodyLimit;
}

/** Sends the deferred 100 Continue for a request whose body will be read. */
export function continueWhenRead(app: FastifyInstance, bodyLimit: number): void {
  app.addHook('preParsing', (request, reply, payload, done) => {
    const expect = request.headers.expect;
    if (
      typeof expect === 'string' &&
      expect.toLowerCase() === '100-continue' &&
      readable(request, bodyLimit)
    ) {
      reply.raw.writeContinue();
    }
    done(null, payload);
  });
}
