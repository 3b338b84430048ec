/**
 * Each response, followed from its request's arrival until it closes: counted in flight (the
 * drain's count and the gauge), bounded in its departure (send-timeout.ts), and recorded once in
 * the latency histogram with the status its client got, which is not always the one it was
 * written with. Apart from the server because every path an answer takes (fastify's hooks, its
 * framework errors, node's 417 for an unsupported Expect) records through this one set.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { answerLeft } from './answer-left.js';
import { ANSWERED_AT, ANSWERED_STATUS, type AnsweredSocket } from './client-error.js';
import type { Drain } from './drain.js';
import { CUT_OFF_STATUS, type ServeMetrics } from './metrics.js';
import { closedByEarlierAnswer, closeWithConnection, noteClosingAnswer } from './pipelined-close.js';
import { boundSend, sendTimedOut } from './send-timeout.js';

/**
 * The status recorded for a response that closed before its answer was out: CUT_OFF_STATUS when
 * the server cut it (the drain, or a send timeout on its connection: its own, or that of an
 * answer it was queued behind; a streamed answer closes, never finishes, when cut; or an answer
 * ahead of it closed the connection once it was out, pipelined-close.ts), else the
 * client left: 499 before its answer began to leave (`left`: answer-left.ts), and after that the
 * status its head said, as for a whole answer (node says 'finish' for one handed to the
 * connection, however little of it the client took) and as nginx logs it.
 */
function closedStatus(
  res: ServerResponse,
  connection: Socket | null,
  left: boolean,
  drainCut: boolean,
): number {
  if (drainCut || sendTimedOut(res, connection) || closedByEarlierAnswer(connection)) return CUT_OFF_STATUS;
  return left ? res.statusCode : 499;
}

/** One server's recording, each piece documented where recordedResponses() makes it. */
export interface RecordedResponses {
  readonly record: (
    res: ServerResponse,
    route: string,
    method: string,
    status: number,
    seconds: number,
  ) => void;
  readonly follow: (request: FastifyRequest, reply: FastifyReply) => void;
  readonly followExpectation: (req: IncomingMessage, res: ServerResponse) => void;
  readonly finishedStatus: (res: ServerResponse, connection: Socket | null) => number;
}

/**
 * One server's recording: `drain` counts its responses in flight and knows the ones it cut off;
 * `sendTimeoutMs` bounds each answer's departure.
 */
export function recordedResponses(
  metrics: ServeMetrics,
  drain: Drain,
  sendTimeoutMs: number,
): RecordedResponses {
  /**
   * The responses in the latency histogram: each is recorded once, when its answer finished
   * (fastify's onResponse, which a response's 'error' runs too), or else when it closes. Not
   * told by writableFinished: node drops an answer written on a connection already destroyed (a
   * reset or a failed write heard, its 'close' not yet said) without 'finish', though the
   * response then reads finished (nothing left in its buffer), and that request went unrecorded.
   */
  const recorded = new WeakSet<ServerResponse>();
  const record = (
    res: ServerResponse,
    route: string,
    method: string,
    status: number,
    seconds: number,
  ): void => {
    if (recorded.has(res)) return;
    recorded.add(res);
    metrics.observe(route, method, status, seconds);
  };
  /**
   * Counts a request in flight until its response closes, and records one that closes
   * unrecorded (fastify's onResponse runs on 'finish', which an answer to a client that already
   * left never reaches); bounds its answer's departure (send-timeout.ts).
   */
  const follow = (request: FastifyRequest, reply: FastifyReply): void => {
    drain.track(reply.raw);
    // A request whose body node:http could not parse was answered by the client-error handler.
    // The request's socket, not the response's: a response queued behind earlier answers on its
    // connection has none yet.
    const socket = request.raw.socket as AnsweredSocket | null;
    const left = answerLeft(reply.raw, request.raw.socket);
    reply.raw.once('close', () => {
      if (recorded.has(reply.raw)) return;
      // Answered raw: its time ended when that answer was out, not at this close, which waited
      // for its connection's linger (up to LINGER_MS).
      const answeredAt = socket?.[ANSWERED_AT];
      const lingered = answeredAt === undefined ? 0 : performance.now() - answeredAt;
      record(
        reply.raw,
        request.routeOptions.url ?? 'unmatched',
        request.method,
        socket?.[ANSWERED_STATUS] ??
          closedStatus(reply.raw, request.raw.socket, left(), drain.cutOff(reply.raw)),
        (reply.elapsedTime - lingered) / 1000,
      );
    });
    closeWithConnection(reply.raw, request.raw.socket);
    noteClosingAnswer(reply.raw, request.raw.socket);
    boundSend(reply.raw, sendTimeoutMs);
  };
  /**
   * The status recorded for a finished answer: node before 24.20 and 26.7 says 'finish' also for
   * an answer whose connection was destroyed while it was still being sent (24.20+ and 26.7+ no
   * longer do, nodejs/node#64847): one the send timeout or the drain cut off was never received.
   */
  const finishedStatus = (res: ServerResponse, connection: Socket | null): number =>
    sendTimedOut(res, connection) || drain.cutOff(res) ? CUT_OFF_STATUS : res.statusCode;
  /**
   * follow() for the 417 of an unsupported Expect, which node answers outside fastify: without
   * it, one queued behind a call still running was outside the gauge and the drain's count, and
   * went unrecorded when the drain then cut it off. Recorded as a URL fastify refuses before
   * routing is ('unmatched'), timed from when node handed it over.
   */
  const followExpectation = (req: IncomingMessage, res: ServerResponse): void => {
    const began = performance.now();
    const connection = req.socket;
    const seconds = (): number => (performance.now() - began) / 1000;
    drain.track(res);
    const left = answerLeft(res, connection);
    res.once('finish', () => {
      record(res, 'unmatched', req.method ?? '', finishedStatus(res, connection), seconds());
    });
    res.once('close', () => {
      if (recorded.has(res)) return;
      const status = closedStatus(res, connection, left(), drain.cutOff(res));
      record(res, 'unmatched', req.method ?? '', status, seconds());
    });
    closeWithConnection(res, connection);
    boundSend(res, sendTimeoutMs);
  };
  return { record, follow, followExpectation, finishedStatus };
}
