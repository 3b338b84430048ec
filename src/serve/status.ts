/**
 * The one table from an error's stable code (and refusal reason) to an HTTP status. Every error
 * answer the server gives goes through `answerFor`, so the table is the whole contract:
 *
 * | code / reason                          | status | notes                                     |
 * | -------------------------------------- | -----: | ----------------------------------------- |
 * | OMNI_ERR_REJECTED requests/units/queued |    503 | Retry-After; answered at once, no worker  |
 * | OMNI_ERR_UNAVAILABLE                   |    503 | starting, draining, stopped or failed; a  |
 * |                                        |        | call a drain abandoned (linear-route.ts)  |
 * | OMNI_ERR_TOO_LARGE                     |    413 | can never fit: body has cost, unitCapacity |
 * | OMNI_ERR_BODY_TOO_LARGE                |    413 | over the server's limit: body has limit   |
 * | OMNI_ERR_BAD_BODY / _INVALID_ARGUMENT / _INVALID_COST | 400 | malformed, truncated, wrong shape |
 * | OMNI_ERR_BAD_REQUEST                   |    400 | HTTP framing, URL, header values          |
 * | OMNI_ERR_REQUEST_TIMEOUT / _HEADERS_TOO_LARGE | 408 / 431 | node:http's limits; 1,000 lines |
 * | OMNI_ERR_UNSUPPORTED_MEDIA_TYPE        |    415 |                                           |
 * | OMNI_ERR_EXPECTATION_FAILED            |    417 | an Expect header other than 100-continue  |
 * | OMNI_ERR_NOT_FOUND                     |    404 | a path this server does not serve         |
 * | OMNI_ERR_METHOD_NOT_ALLOWED            |    405 | a path it serves, another method: Allow   |
 * | OMNI_ERR_NOT_IMPLEMENTED               |    501 | CONNECT: this server is no proxy          |
 * | OMNI_ERR_DEADLINE                      |    504 | capacity stays held until the work ends   |
 * | OMNI_ERR_ABORTED                       |    499 | the client left; nobody reads the answer  |
 * | OMNI_ERR_NATIVE                        |    500 | body carries `nativeCode`                 |
 * | OMNI_ERR_WORKER_EXITED / _TASK_FAILED / anything else | 500 |                          |
 */
import { BadBodyError, BadRequestError, BodyTooLargeError, UnsupportedMediaTypeError } from '../errors.js';

interface Row {
  readonly status: number;
  /** A capacity refusal: worth retrying soon, so the answer carries Retry-After. */
  readonly retry?: true;
}

const STATUS_TABLE: Readonly<Record<string, Row>> = {
  'OMNI_ERR_REJECTED:requests': { status: 503, retry: true },
  'OMNI_ERR_REJECTED:units': { status: 503, retry: true },
  'OMNI_ERR_REJECTED:queued': { status: 503, retry: true },
  OMNI_ERR_REJECTED: { status: 503, retry: true },
  OMNI_ERR_UNAVAILABLE: { status: 503 },
  OMNI_ERR_TOO_LARGE: { status: 413 },
  OMNI_ERR_BODY_TOO_LARGE: { status: 413 },
  OMNI_ERR_BAD_BODY: { status: 400 },
  OMNI_ERR_INVALID_ARGUMENT: { status: 400 },
  OMNI_ERR_INVALID_COST: { status: 400 },
  OMNI_ERR_BAD_REQUEST: { status: 400 },
  OMNI_ERR_REQUEST_TIMEOUT: { status: 408 },
  OMNI_ERR_HEADERS_TOO_LARGE: { status: 431 },
  OMNI_ERR_UNSUPPORTED_MEDIA_TYPE: { status: 415 },
  OMNI_ERR_EXPECTATION_FAILED: { status: 417 },
  OMNI_ERR_NOT_FOUND: { status: 404 },
  OMNI_ERR_METHOD_NOT_ALLOWED: { status: 405 },
  OMNI_ERR_NOT_IMPLEMENTED: { status: 501 },
  OMNI_ERR_DEADLINE: { status: 504 },
  OMNI_ERR_ABORTED: { status: 499 },
  OMNI_ERR_NATIVE: { status: 500 },
  OMNI_ERR_WORKER_EXITED: { status: 500 },
  OMNI_ERR_TASK_FAILED: { status: 500 },
};

const INTERNAL: Row = { status: 500 };

/** The small JSON body of every error answer. */
export interface ErrorBody {
  /** The error's `OMNI_ERR_*` code (OMNI_ERR_INTERNAL for an error without one). */
  code: string;
  /** For people; may change. Match on `code`. */
  message: string;
  /** OMNI_ERR_REJECTED: which bound refused ('requests', 'units', 'queued'). */
  reason?: string;
  /** OMNI_ERR_NATIVE: the C side's status code. */
  nativeCode?: number;
  /** OMNI_ERR_UNAVAILABLE: the runtime's (or server's) state. */
  state?: string;
  /** OMNI_ERR_TOO_LARGE: the cost asked for (the rows, unless the runtime is given a cost). */
  cost?: number;
  /** OMNI_ERR_TOO_LARGE: the most one call takes (the unit ceiling, or the rows of one native call). */
  unitCapacity?: number;
  /** OMNI_ERR_BODY_TOO_LARGE: the server's body limit, in bytes. */
  limit?: number;
  /** The lower layer's own code (HPE_*, FST_*) when the error came from the HTTP stack. */
  detail?: string;
}

/** answerFor()'s answer to an error: what the server sends for it. */
export interface HttpAnswer {
  /** The HTTP status (see docs/http.md's list of statuses; 500 for an unknown code). */
  readonly status: number;
  /** True for a refusal (503, OMNI_ERR_REJECTED): the answer carries Retry-After. */
  readonly retry: boolean;
  /** The JSON body sent. */
  readonly body: ErrorBody;
  /** The label metrics count this answer under: the refusal reason, else the code in words. */
  readonly label: string;
}

/** An error of the HTTP stack, tagged with that stack's own code. */
type Coded = Error & { detail?: unknown };

/**
 * The status, Retry-After flag and JSON body for any error a request ended with. Never throws:
 * the value may be a caller's own (a `Served` whose call rejects with a Proxy, an Error whose
 * getters throw), and the answer to it is still this table's 500.
 */
export function answerFor(error: unknown): HttpAnswer {
  const err = isInstance(error, Error) ? error : undefined;
  const code = codeOf(err) ?? 'OMNI_ERR_INTERNAL';
  const reason = stringField(err, 'reason');
  const row = rowFor(code, reason);
  const body: ErrorBody = { code, message: messageOf(error) };
  if (reason !== undefined) body.reason = reason;
  const nativeCode = field(err, 'nativeCode');
  if (typeof nativeCode === 'number') body.nativeCode = nativeCode;
  const state = stringField(err, 'state');
  if (state !== undefined) body.state = state;
  const detail = stringField(err, 'detail');
  if (detail !== undefined) body.detail = detail;
  // A 413 says what would fit, so that a client can split its rows without parsing the message.
  if (code === 'OMNI_ERR_TOO_LARGE') {
    const cost = countField(err, 'cost');
    const unitCapacity = countField(err, 'unitCapacity');
    if (cost !== undefined) body.cost = cost;
    if (unitCapacity !== undefined) body.unitCapacity = unitCapacity;
  } else if (code === 'OMNI_ERR_BODY_TOO_LARGE') {
    const limit = countField(err, 'limit');
    if (limit !== undefined) body.limit = limit;
  }
  // Metrics label: the refusal reason, else the code's own words ('too-large', 'unavailable').
  const label =
    reason ??
    code
      .replace(/^OMNI_ERR_/, '')
      .toLowerCase()
      .replaceAll('_', '-');
  return { status: row.status, retry: row.retry === true, body, label };
}

/** The HTTP status the table gives a code (and reason); 500 for codes it does not know. */
export function statusFor(code: string, reason?: string): number {
  // Not a code it knows, as answerFor's codeOf takes one: converting a Symbol, or an object
  // without a prototype, to a table key threw an uncoded TypeError.
  if (typeof code !== 'string') return INTERNAL.status;
  return rowFor(code, typeof reason === 'string' ? reason : undefined).status;
}

function rowFor(code: string, reason: string | undefined): Row {
  const specific = reason === undefined ? undefined : ownRow(`${code}:${reason}`);
  return specific ?? ownRow(code) ?? INTERNAL;
}

/** The table's own rows only: 'constructor' or 'toString' found Object.prototype's, no status. */
function ownRow(key: string): Row | undefined {
  return Object.hasOwn(STATUS_TABLE, key) ? STATUS_TABLE[key] : undefined;
}

const BODY_UNREADABLE = new Set([
  'FST_ERR_CTP_INVALID_CONTENT_LENGTH',
  'FST_ERR_CTP_EMPTY_JSON_BODY',
  'FST_ERR_CTP_INVALID_JSON_BODY',
  'ECONNRESET',
  'ECONNABORTED',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

/**
 * Rewrites what the HTTP stack (fastify, node:http) throws into this server's coded errors.
 * A body that could not be read is a 400, never a 413: only the stack's own over-the-limit
 * error becomes BodyTooLargeError. Never throws (see answerFor).
 */
export function fromHttpStack(error: unknown, bodyLimit: number): Error {
  const isError = isInstance(error, Error);
  const err = isError ? error : undefined;
  const code = codeOf(err);
  if (code?.startsWith('OMNI_ERR_')) return error as Error;
  const message = messageOf(error);
  const tagged = <E extends Error>(e: E): E => {
    if (code !== undefined) (e as Coded).detail = code;
    return e;
  };
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return tagged(new BodyTooLargeError(bodyLimit));
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return tagged(new UnsupportedMediaTypeError());
  if (
    (code !== undefined && BODY_UNREADABLE.has(code)) ||
    isInstance(error, SyntaxError) ||
    message === 'aborted'
  ) {
    return tagged(new BadBodyError(`the request body could not be read: ${message}`));
  }
  const statusCode = field(err, 'statusCode');
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    return tagged(new BadRequestError(message));
  }
  return isError ? (error as Error) : new Error(message);
}

/** What a message says of a value that cannot be read. */
const UNREADABLE = 'the error could not be read';

/** `value instanceof type`, false where asking throws (a Proxy's getPrototypeOf trap). */
function isInstance(value: unknown, type: abstract new (...args: never[]) => unknown): boolean {
  try {
    return value instanceof type;
  } catch {
    return false;
  }
}

/** A field of an error, undefined where there is none or reading it throws (a getter, a trap). */
function field(err: unknown, key: string): unknown {
  if (err === undefined) return undefined;
  try {
    return (err as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

/** A field that is a count (a finite number >= 0: JSON has no NaN), else undefined. */
function countField(err: unknown, key: string): number | undefined {
  const value = field(err, key);
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function stringField(err: unknown, key: string): string | undefined {
  const value = field(err, key);
  return typeof value === 'string' ? value : undefined;
}

/**
 * An Error's stable code (OMNI_ERR_*, or the HTTP stack's own), read once; undefined for any
 * other value, as for an Error without one or whose code cannot be read.
 */
export function codeOf(error: unknown): string | undefined {
  return isInstance(error, Error) ? stringField(error, 'code') : undefined;
}

/** An Error's message, else the value as text (as String() gives it), never throwing. */
export function messageOf(error: unknown): string {
  try {
    return String(isInstance(error, Error) ? (error as Error).message : error);
  } catch {
    return UNREADABLE;
  }
}

/**
 * `error` as the server's own failure, answered 500 OMNI_ERR_INTERNAL whatever its code: for a
 * route that takes nothing of the client's (GET /health, GET /metrics), where a code of the
 * caller's report (OMNI_ERR_INVALID_ARGUMENT: 400) would blame the probe. The original is its
 * cause.
 */
export function serverFailure(error: unknown): Error {
  return new Error(messageOf(error), { cause: error });
}
