/**
 * Answers for requests node:http cannot parse (bad framing, a non-hex chunk size, a truncated
 * body, oversized headers). These never reach a route, so they never reach a worker: the parser
 * fails, the socket is answered from here and closed.
 */
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { BadBodyError, BadRequestError, OmniError } from '../errors.js';
import type { ServeMetrics } from './metrics.js';
import { answerFor } from './status.js';

/** llhttp codes that mean the body could not be read (as opposed to the request line or headers). */
const BODY_PARSE_ERRORS = new Set([
  'HPE_INVALID_CHUNK_SIZE',
  'HPE_CHUNK_EXTENSIONS_OVERFLOW',
  'HPE_INVALID_EOF_STATE',
  'HPE_INVALID_CONTENT_LENGTH',
  'HPE_UNEXPECTED_CONTENT_LENGTH',
  'HPE_INVALID_TRANSFER_ENCODING',
  'HPE_STRICT',
]);

function errorFor(code: string, message: string): Error & { detail?: string } {
  const error: Error & { detail?: string } =
    code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new OmniError('OMNI_ERR_REQUEST_TIMEOUT', 'the request was not received in time')
      : code === 'HPE_HEADER_OVERFLOW'
        ? new OmniError('OMNI_ERR_HEADERS_TOO_LARGE', 'the request headers are too large')
        : BODY_PARSE_ERRORS.has(code)
          ? new BadBodyError(`the request body could not be read: ${message}`)
          : new BadRequestError(`the request is not valid HTTP: ${message}`);
  error.detail = code;
  return error;
}

/**
 * Set on a socket this handler answered, to the status it sent: a request already routed (its
 * chunked body failed mid-way) then ends without its response finishing, and must be recorded
 * with that status, not as a client that left (499).
 */
export const ANSWERED_STATUS = Symbol('omni.serve.answeredStatus');

export type AnsweredSocket = Socket & { [ANSWERED_STATUS]?: number };

/**
 * llhttp's error for bytes after a request that closes its connection (`Connection: close`, or
 * HTTP/1.0 without keep-alive). Those bytes are no request of the server's to answer (RFC 9112
 * 9.6: it answers the closing request, processes nothing after it): that request's own answer
 * is still to come, and node closes the connection after it.
 */
const DATA_AFTER_CLOSE = 'HPE_CLOSED_CONNECTION';

/** A server 'clientError' listener: one JSON answer if nothing was sent yet, then close. */
export function clientErrorHandler(
  metrics: ServeMetrics,
): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    // A reset connection has nobody to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const code = err.code ?? 'unknown';
    const pending = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    // Not counted: the connection is not closed for it, nor answered 400 (every later read
    // reports it again, as the parser stays failed).
    if (code === DATA_AFTER_CLOSE && pending != null) return;
    metrics.clientError(code);
    const answer = answerFor(errorFor(code, err.message));
    const body = JSON.stringify(answer.body);
    // The request may already be routed (a chunked body fails mid-way): answer only if its
    // response has not started, as node:http's own default handler does.
    if (socket.writable && pending?.headersSent !== true) {
      (socket as AnsweredSocket)[ANSWERED_STATUS] = answer.status;
      socket.write(
        `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\n` +
          'Content-Type: application/json; charset=utf-8\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(err);
  };
}

/**
 * A server 'checkExpectation' listener: an `Expect` header other than 100-continue is answered
 * 417 in JSON like every other error (node:http's own answer has no body), then closed. Such a
 * request never reaches a route.
 */
export function expectationHandler(
  metrics: ServeMetrics,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (_req, res) => {
    metrics.clientError('EXPECTATION_FAILED');
    const answer = answerFor(
      new OmniError('OMNI_ERR_EXPECTATION_FAILED', 'only "Expect: 100-continue" is supported'),
    );
    const body = JSON.stringify(answer.body);
    res.shouldKeepAlive = false;
    res.writeHead(answer.status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
  };
}
