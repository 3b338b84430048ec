/**
 * The 404 of a request no route serves. One answer, given from three places: the not-found
 * handler, the onRequest hook of a draining server (before the body is read), and the drain's
 * answer to the 404s still reading theirs (unread-not-found.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { NotFoundError } from '../errors.js';
import { answerFor } from './status.js';

/** The 404 of a request for a path, or a method, no route serves. */
export function notFound(request: FastifyRequest): NotFoundError {
  return new NotFoundError(`no route for ${request.method} ${request.url.split('?')[0]}`);
}

/** Answers the 404 of a request for a path, or a method, no route serves. */
export function sendNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const answer = answerFor(notFound(request));
  return reply.code(answer.status).send(answer.body);
}
