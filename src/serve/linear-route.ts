/**
 * POST /v1/linear: rows in, GELU(x W^T + b) rows out, in the request's own encoding (body.ts).
 * Cost is the row count. Every failure is thrown to the server's error handler, which answers
 * through the status table (status.ts); nothing here picks a status.
 */
import { types } from 'node:util';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { positiveDecimal } from '../decimal.js';
import {
  BadRequestError,
  BodyTooLargeError,
  OmniError,
  TaskFailedError,
  UnavailableError,
  UnsupportedMediaTypeError,
} from '../errors.js';
import { kRowsRefusal, type LinearRuntime } from '../linear/linear-runtime.js';
import {
  decodeLinearBody,
  encodeJson,
  encodeOctets,
  leastBodyBytes,
  OCTET_STREAM,
  octetLengthRefusal,
  parseRowsHint,
  ROWS_HEADER,
} from './body.js';
import { clientGone } from './client-gone.js';
import type { Drain } from './drain.js';
import { bodyWillBeRead } from './expect-continue.js';
import { fieldValuesDiffer } from './header-lines.js';
import { jsonAnswerStream, streamsJson } from './json-answer.js';
import type { Served } from './served.js';
import { codeOf, messageOf } from './status.js';

/** POST rows here (octet or JSON, see BodyEncoding); the answer is GELU(x W^T + b)'s rows. */
export const LINEAR_PATH = '/v1/linear';
/** A client's own deadline in milliseconds; it can shorten the server's, never lengthen it. */
export const DEADLINE_HEADER = 'x-omni-deadline-ms';

export interface LinearRouteOptions {
  readonly runtime: Served;
  /** The runtime's widths, read once by serve() when it checked them. */
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly drain: Drain;
  /**
   * The server's deadline for every call, else the runtime's default (unset: none; Infinity:
   * none, passed on so that it lifts a default the runtime has).
   */
  readonly deadlineMs: number | undefined;
  /** The server's body limit: a body over it is refused by fastify, before this route's checks. */
  readonly bodyLimit: number;
}

function parseDeadline(raw: unknown, serverMs: number | undefined): number | undefined {
  if (raw === undefined) return serverMs;
  // Any length honoured: decimal text too small for a double is the shortest deadline there is
  // (past at once); too large, Infinity: no shorter than the server's.
  const value = typeof raw === 'string' ? positiveDecimal(raw) : undefined;
  if (value === undefined) {
    throw new BadRequestError(
      `${DEADLINE_HEADER} must be a number of milliseconds > 0, got ${JSON.stringify(raw)}`,
    );
  }
  if (value === Number.POSITIVE_INFINITY) return serverMs;
  return serverMs === undefined ? value : Math.min(value, serverMs);
}

function checkEncoding(
  encoding: string | undefined,
  transfer: string | undefined,
  type: string | undefined,
): void {
  if (!onlyCoding(encoding, 'identity')) {
    throw new UnsupportedMediaTypeError(
      `Content-Encoding ${JSON.stringify(encoding)} is not supported; send it uncompressed`,
    );
  }
  // node decodes only the chunked transfer coding: any other (gzip, chunked) would reach the
  // route still compressed.
  if (!onlyCoding(transfer, 'chunked')) {
    throw new UnsupportedMediaTypeError(
      `Transfer-Encoding ${JSON.stringify(transfer)} is not supported; send it uncompressed`,
    );
  }
  // A charset means something only for JSON (the octet-stream body is binary).
  const json = /^\s*application\/json\s*(;|$)/i.test(type ?? '');
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(type ?? '')?.[1]?.toLowerCase();
  if (json && charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new UnsupportedMediaTypeError(`charset ${charset} is not supported; send UTF-8`);
  }
}

/**
 * Whether every coding a list header names is `allowed`. Empty list elements (`identity,`,
 * `, chunked`) are ignored (RFC 9110 5.6.1). Read on every request: an absent header makes nothing.
 */
function onlyCoding(header: string | undefined, allowed: string): boolean {
  if (header === undefined) return true;
  for (const element of header.split(',')) {
    const coding = element.trim().toLowerCase();
    if (coding !== '' && coding !== allowed) return false;
  }
  return true;
}

/**
 * Throws what the handler would answer, once it had read the body, for a request whose headers
 * already settle it: a malformed or contradictory rows hint, a chunked body whose hinted rows
 * cannot fit the body limit, a malformed deadline, an octet-stream Content-Length that cannot
 * hold whole rows (the hinted ones, when hinted), or more rows (hinted, else that
 * Content-Length's) than the runtime can ever take in one call (refused by the runtime, which
 * counts it as it counts that refusal from run()). In the handler's order, so the answer is the
 * one it would give once a well-formed body of that length was read (a malformed one, or a JSON
 * body with other rows, was its 400 there). An empty body is left to the handler: there is no
 * upload to spare.
 */
async function refuseFromHeaders(
  request: FastifyRequest,
  runtime: Served,
  inFeatures: number,
  serverDeadlineMs: number | undefined,
  bodyLimit: number,
): Promise<void> {
  const query = request.query as Record<string, unknown> | undefined;
  const rows = parseRowsHint(query?.rows, request.headers[ROWS_HEADER]);
  const octets = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase() === OCTET_STREAM;
  const declared = request.headers['content-length'];
  // Chunked (checkEncoding let no other coding through): node takes an empty Transfer-Encoding
  // for none, a request without a body.
  const chunked = (request.headers['transfer-encoding'] ?? '') !== '';
  // A chunked body is measured only as it arrives: fastify's 413 comes once the limit is passed,
  // before the handler reads the deadline. A declared length over the limit never gets here.
  if (rows !== undefined && declared === undefined && chunked) {
    const least = leastBodyBytes(rows, inFeatures, octets ? 'octet' : 'json');
    if (least > bodyLimit) {
      throw new BodyTooLargeError(
        bodyLimit,
        `${rows} rows of ${inFeatures} take at least ${least} bytes, over the body limit of ${bodyLimit}`,
      );
    }
  }
  parseDeadline(request.headers[DEADLINE_HEADER], serverDeadlineMs);
  const length = Number(declared ?? 0);
  // An empty body is the handler's 400 whatever the hint says (decoded before any admission):
  // refused here as too many rows, it was a 413 counted as the runtime's refusal.
  if (length === 0 && !chunked) return;
  if (octets && length > 0) {
    const badLength = octetLengthRefusal(length, rows, inFeatures);
    if (badLength !== undefined) throw badLength;
  }
  // Without a hint, an octet-stream Content-Length (whole rows: checked above) says the rows.
  const rowBytes = leastBodyBytes(1, inFeatures, 'octet');
  const settled = rows ?? (octets && length > 0 ? length / rowBytes : undefined);
  if (settled === undefined) return;
  // A Served that is not a LinearRuntime (a test's wrapper) leaves the row count to run().
  const refuseRows = (runtime as Partial<LinearRuntime>)[kRowsRefusal]?.(settled);
  if (refuseRows !== undefined) await refuseRows();
}

/**
 * What a call's rejection is answered with. A call the drain's timeout abandoned (its thread
 * terminated: OMNI_ERR_WORKER_EXITED) is a 503, not a 500: the server is going away, nothing
 * failed in the request, and the work, a pure function of the body, is safe to send again to
 * another server, which a 503 tells a client or proxy it may. A thread lost otherwise stays a
 * 500, also while a drain waits for its call: that loss may be the request's own doing, and
 * another server would only lose a thread to it too. A rejection without this library's code
 * (a `Served` of the caller's own) is the call's failure, a 500: taken as it is, one with a
 * statusCode of 4xx, a SyntaxError or the message 'aborted' read as an error of the HTTP stack,
 * a 400 that blamed the client's request.
 */
function callFailure(err: unknown, drain: Drain): unknown {
  const code = codeOf(err);
  if (code === undefined || !code.startsWith('OMNI_ERR_')) {
    return new OmniError('OMNI_ERR_INTERNAL', messageOf(err));
  }
  if (!drain.abandoning || code !== 'OMNI_ERR_WORKER_EXITED') return err;
  const abandoned = new UnavailableError(
    'draining',
    'the server drained: this call was abandoned (the drain timeout or a second signal cut it off)',
  );
  ABANDONED.add(abandoned);
  return abandoned;
}

/** The 503s of calls the drain abandoned while they ran (see callFailure). */
const ABANDONED = new WeakSet<object>();

/**
 * Whether `error` is the 503 of a call the drain abandoned: it ran, so it is no refusal, though
 * answered as the draining server refuses (omni_http_refused_total counts refusals alone).
 */
export function abandonedByDrain(error: unknown): boolean {
  return typeof error === 'object' && error !== null && ABANDONED.has(error);
}

export function linearRoute(
  app: FastifyInstance,
  { runtime, inFeatures, outFeatures, drain, deadlineMs, bodyLimit }: LinearRouteOptions,
): void {
  app.post(
    LINEAR_PATH,
    {
      // Refused before the body is read: a draining server takes no new work, a body this
      // route would misread (compressed, or JSON in a charset other than UTF-8) is refused
      // rather than decoded as if it were plain, and one its headers already condemn is never
      // uploaded (no 100 Continue; the answer goes out at once and the connection closes).
      onRequest: async (request) => {
        if (drain.state !== 'serving') throw new UnavailableError('draining', 'the server is draining');
        // node keeps the first Content-Type and drops the others: a proxy in front that read
        // another would disagree with this server about what the body is (as for Host). The same
        // type twice leaves nothing to disagree on.
        if (fieldValuesDiffer(request.raw, 'content-type')) {
          throw new BadRequestError('a request must carry one Content-Type, not several that differ');
        }
        checkEncoding(
          request.headers['content-encoding'],
          request.headers['transfer-encoding'],
          request.headers['content-type'],
        );
        if (bodyWillBeRead(request, bodyLimit))
          await refuseFromHeaders(request, runtime, inFeatures, deadlineMs, bodyLimit);
      },
    },
    async (request, reply) => {
      const query = request.query as Record<string, unknown> | undefined;
      const rowsHint = parseRowsHint(query?.rows, request.headers[ROWS_HEADER]);
      const callDeadline = parseDeadline(request.headers[DEADLINE_HEADER], deadlineMs);
      const input = decodeLinearBody(request.body, rowsHint, inFeatures);
      let y: unknown;
      try {
        y = await runtime.run(input.x, {
          rows: input.rows,
          // The fresh copy is this request's alone: move it to the worker instead of cloning it.
          transfer: [input.x.buffer as ArrayBuffer],
          signal: clientGone(reply.raw),
          ...(callDeadline === undefined ? {} : { deadlineMs: callDeadline }),
        });
      } catch (err) {
        throw callFailure(err, drain);
      }
      // By its internal slot: instanceof asks the value (a Proxy's trap may throw), and a
      // result that is no rows is the call's failure (TASK_FAILED), whatever it is.
      if (!types.isFloat32Array(y) || y.length !== input.rows * outFeatures) {
        throw new TaskFailedError(
          `the worker returned ${describe(y)}, expected ${input.rows} x ${outFeatures} floats`,
        );
      }
      reply.header(ROWS_HEADER, String(input.rows));
      if (input.encoding === 'octet') return reply.type(OCTET_STREAM).send(encodeOctets(y));
      if (streamsJson(input.rows, outFeatures)) {
        return reply
          .type('application/json; charset=utf-8')
          .send(jsonAnswerStream(y, input.rows, outFeatures));
      }
      return reply.send(encodeJson(y, input.rows, outFeatures));
    },
  );
}

function describe(value: unknown): string {
  return types.isFloat32Array(value) ? `${value.length} floats` : typeof value;
}
