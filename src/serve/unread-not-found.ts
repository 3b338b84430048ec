/**
 * The 404s whose request body is still arriving. While serving, a 404's body is read first
 * (fastify's way, and the connection can go on); a drain closes every connection after its
 * answer, so the body is read for nothing: a client stalled mid-upload to an unknown path since
 * before the drain held it, for a request with no work, until its timeout cut it off (444, the
 * drain not clean). Those that come once it began are answered before their body (server.ts's
 * onRequest); those already reading theirs are answered when it begins (answerAll()).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

export class UnreadNotFound {
  readonly #reading = new Map<FastifyReply, FastifyRequest>();

  /** Follows a 404 routed while serving until its response closes. */
  add(request: FastifyRequest, reply: FastifyReply): void {
    this.#reading.set(reply, request);
    reply.raw.once('close', () => this.#reading.delete(reply));
  }

  /**
   * Answers, with `answer`, each one whose body is not all read yet and that is not answered:
   * fastify's 404 handler, reached once the body is read, then finds it sent and does nothing.
   */
  answerAll(answer: (request: FastifyRequest, reply: FastifyReply) => void): void {
    for (const [reply, request] of this.#reading) {
      this.#reading.delete(reply);
      if (!request.raw.complete && !reply.sent) answer(request, reply);
    }
  }
}
