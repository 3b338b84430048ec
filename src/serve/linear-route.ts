/**
 * POST /v1/linear: rows in, GELU(x W^T + b) rows out, in the request's own encoding (body.ts).
 * Cost is the row count. Every failure is thrown to the server's error handler, which answers
 * through the status table (status.ts); nothing here picks a status.
 */
import type { FastifyInstance } from 'fastify';
import { isDecimal } from '../decimal.js';
import { BadRequestError, TaskFailedError, UnavailableError, UnsupportedMediaTypeError } from '../errors.js';
import {
  decodeLinearBody,
  encodeJson,
  encodeOctets,
  OCTET_STREAM,
  parseRowsHint,
  ROWS_HEADER,
} from './body.js';
import { clientGone } from './client-gone.js';
import type { Drain } from './drain.js';
import type { Served } from './server.js';

export const LINEAR_PATH = '/v1/linear';
/** A client's own deadline in milliseconds; it can shorten the server's, never lengthen it. */
export const DEADLINE_HEADER = 'x-omni-deadline-ms';

export interface LinearRouteOptions {
  readonly runtime: Served;
  readonly drain: Drain;
  /**
   * The server's deadline for every call, else the runtime's default (unset: none; Infinity:
   * none, passed on so that it lifts a default the runtime has).
   */
  readonly deadlineMs: number | undefined;
}

function parseDeadline(raw: unknown, serverMs: number | undefined): number | undefined {
  if (raw === undefined) return serverMs;
  const value = typeof raw === 'string' && isDecimal(raw) ? Number(raw) : Number.NaN;
  if (!(value > 0)) {
    throw new BadRequestError(
      `${DEADLINE_HEADER} must be a number of milliseconds > 0, got ${JSON.stringify(raw)}`,
    );
  }
  // Decimal text too long for a double reads as Infinity: no shorter than the server's.
  if (value === Number.POSITIVE_INFINITY) return serverMs;
  return serverMs === undefined ? value : Math.min(value, serverMs);
}

function checkEncoding(
  encoding: string | undefined,
  transfer: string | undefined,
  type: string | undefined,
): void {
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw new UnsupportedMediaTypeError(
      `Content-Encoding ${JSON.stringify(encoding)} is not supported; send it uncompressed`,
    );
  }
  // node decodes only the chunked transfer coding: any other (gzip, chunked) would reach the
  // route still compressed. Empty list elements (`, chunked`) are ignored (RFC 9110 5.6.1).
  const codings = transfer
    ?.split(',')
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t !== '');
  if (codings?.some((t) => t !== 'chunked')) {
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

export function linearRoute(app: FastifyInstance, { runtime, drain, deadlineMs }: LinearRouteOptions): void {
  app.post(
    LINEAR_PATH,
    {
      // Refused before the body is read: a draining server takes no new work, and a body this
      // route would misread (compressed, or JSON in a charset other than UTF-8) is refused
      // rather than decoded as if it were plain.
      onRequest: async (request) => {
        if (drain.state !== 'serving') throw new UnavailableError('draining', 'the server is draining');
        checkEncoding(
          request.headers['content-encoding'],
          request.headers['transfer-encoding'],
          request.headers['content-type'],
        );
      },
    },
    async (request, reply) => {
      const query = request.query as Record<string, unknown> | undefined;
      const rowsHint = parseRowsHint(query?.rows, request.headers[ROWS_HEADER]);
      const callDeadline = parseDeadline(request.headers[DEADLINE_HEADER], deadlineMs);
      const input = decodeLinearBody(request.body, rowsHint, runtime.inFeatures);
      const y = await runtime.run(input.x, {
        rows: input.rows,
        // The fresh copy is this request's alone: move it to the worker instead of cloning it.
        transfer: [input.x.buffer as ArrayBuffer],
        signal: clientGone(reply.raw),
        ...(callDeadline === undefined ? {} : { deadlineMs: callDeadline }),
      });
      if (!(y instanceof Float32Array) || y.length !== input.rows * runtime.outFeatures) {
        throw new TaskFailedError(
          `the worker returned ${describe(y)}, expected ${input.rows} x ${runtime.outFeatures} floats`,
        );
      }
      reply.header(ROWS_HEADER, String(input.rows));
      if (input.encoding === 'octet') return reply.type(OCTET_STREAM).send(encodeOctets(y));
      return reply.send(encodeJson(y, input.rows, runtime.outFeatures));
    },
  );
}

function describe(value: unknown): string {
  return value instanceof Float32Array ? `${value.length} floats` : typeof value;
}
