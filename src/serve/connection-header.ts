/**
 * The Connection header of an answer: whether its connection closes after it. fastify and node
 * each decide that their own way, and here either can be wrong: a close drops the requests
 * pipelined behind the answer, already admitted, and a connection kept alive with its request's
 * body unread would parse that body as the next request. The onSend hook sets it for every
 * answer that passes through fastify's hooks; a framework error's answer, which skips them, gets
 * closeIfUnread alone.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { answeredLater } from './client-error.js';
import type { ServerState } from './drain.js';
import { continueOwed } from './expect-continue.js';

/**
 * Answered before its body was read: node would go on reading that body on a kept-alive
 * connection, and a malformed rest of it would get a second, unasked answer.
 */
export function closeIfUnread(request: IncomingMessage, reply: FastifyReply): void {
  if (!request.complete) reply.header('connection', 'close');
}

/**
 * Takes back a `Connection: close` of fastify's, leaving that header to node as for any other
 * answer: `keep-alive` with its `Keep-Alive: timeout`, or `close` where node closes anyway.
 * node sends none at all after a removeHeader('connection') (its `_removedConnection`), which an
 * HTTP/1.0 keep-alive client reads as a close, and an HTTP/1.1 one as no idle timeout given.
 */
function takeBackClose(reply: FastifyReply): void {
  reply.removeHeader('connection');
  (reply.raw as ServerResponse & { _removedConnection?: boolean })._removedConnection = false;
}

/** Sets the Connection header of an answer about to be sent, `state` being the server's. */
export function connectionAfterAnswer(
  request: FastifyRequest,
  reply: FastifyReply,
  state: ServerState,
): void {
  closeIfUnread(request.raw, reply);
  // While draining, every connection closes after its last answer, those of requests that
  // came before the drain too: a client reusing a kept-alive one would be reset when the
  // drain ends. Not after an earlier one: node would drop the answers of the requests
  // pipelined behind it, already admitted, and abort their work (nor after one answered
  // before the drain, queued behind this one: its head is written, saying keep-alive).
  if (state !== 'serving' && !answeredLater(request.raw, reply.raw)) {
    reply.header('connection', 'close');
  }
  // fastify closes the connection after every body parser error, even one found once the
  // whole body was read (malformed JSON): node still runs the requests pipelined behind it,
  // whose answers that close would then drop (RFC 9112 9.6: such requests must not run).
  // Not when node closes after the answer anyway (a 100 Continue owed): the answer says so.
  if (
    request.raw.complete &&
    state === 'serving' &&
    reply.getHeader('connection') === 'close' &&
    !continueOwed(request.raw, reply.raw)
  ) {
    takeBackClose(reply);
  }
}
