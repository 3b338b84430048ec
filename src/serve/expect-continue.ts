/**
 * `Expect: 100-continue`: the client uploads its body only once the server says 100 Continue.
 * node says it at once unless a server listens for 'checkContinue', so a request refused before
 * its body is read (draining, compressed, another media type, over the body limit, a rows hint
 * that settles the answer) had it uploaded for nothing. Here the 100 is sent from a preParsing
 * hook: after routing and the route's onRequest checks, and only for a body this server would go
 * on to read. Only a request node deferred gets one: node alone decides what asks for it (an
 * HTTP/1.0 request's expectation is ignored; a list such as `100-continue, 100-continue` asks).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { OCTET_STREAM } from './body.js';
import { clientFailed } from './client-error.js';

const READ_TYPES = new Set([OCTET_STREAM, 'application/json']);
/**
 * The methods whose body fastify reads (fastify 5's `bodywith`); any other (GET, HEAD, TRACE,
 * and PURGE, COPY, PROPFIND, ... that node also accepts) runs the handler, or the 404, unread.
 */
const BODY_METHODS = new Set(['DELETE', 'OPTIONS', 'PATCH', 'PUT', 'POST', 'QUERY']);
/** Requests whose 100 Continue node left to this server. */
const deferred = new WeakSet<IncomingMessage>();
/** Responses whose 100 Continue was written. */
const continued = new WeakSet<ServerResponse>();

/** A server 'checkContinue' listener: the request goes on as any other, without the 100. */
export function deferContinue(this: Server, req: IncomingMessage, res: ServerResponse): void {
  deferred.add(req);
  this.emit('request', req, res);
}

/** Whether this server goes on to read `request`'s body (the route's own checks aside). */
export function bodyWillBeRead(request: FastifyRequest, bodyLimit: number): boolean {
  // A 404 reads a body it has a parser for, as a route does: withholding the 100 there would
  // leave the client waiting for it while the server waits for the body.
  if (!BODY_METHODS.has(request.raw.method ?? '')) return false;
  const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (type === undefined || !READ_TYPES.has(type)) return false;
  const length = request.headers['content-length'];
  return length === undefined || Number(length) <= bodyLimit;
}

/**
 * A pipelined request's response waits behind earlier ones until node attaches it to the
 * connection, buffering what is written meanwhile; once its answer is ended there, node puts
 * the head before that buffer, so a 100 written while waiting would land between the head and
 * the body. Written once the response is attached instead, and only if its head is not out
 * yet: the client then sends its body only once the answers before it are out.
 */
function writeContinue(res: ServerResponse): void {
  if (res.socket !== null) {
    res.writeContinue();
    continued.add(res);
    return;
  }
  const onSocket = (): void => {
    res.removeListener('close', forget);
    // Timed out while it waited (node's request timeout counts the wait): its 408 comes
    // instead (client-error.ts), and a 100 before it had the client upload the body for nothing.
    if (res.headersSent || clientFailed(res.socket)) return;
    res.writeContinue();
    continued.add(res);
  };
  const forget = (): void => {
    res.removeListener('socket', onSocket);
  };
  res.once('socket', onSocket);
  res.once('close', forget);
}

/**
 * Whether `req` asked for a 100 Continue that `res` has not written (yet, or at all): node
 * then closes the connection after the answer (the client may still be about to send a body),
 * so the answer must say `Connection: close`.
 */
export function continueOwed(req: IncomingMessage, res: ServerResponse): boolean {
  return deferred.has(req) && !continued.has(res);
}

/**
 * Whether `res` wrote its 100 Continue (handed to its connection, unless that was no longer
 * writable: see answer-left.ts).
 */
export function continueWritten(res: ServerResponse): boolean {
  return continued.has(res);
}

/** Sends the deferred 100 Continue for a request whose body will be read. */
export function continueWhenRead(app: FastifyInstance, bodyLimit: number): void {
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (deferred.has(request.raw) && bodyWillBeRead(request, bodyLimit)) writeContinue(reply.raw);
    done(null, payload);
  });
}
