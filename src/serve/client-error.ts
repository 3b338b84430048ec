/**
 * Answers for requests node:http cannot parse (bad framing, a non-hex chunk size, a truncated
 * body, oversized headers), an unsupported Expect and a CONNECT. These never reach a route, so
 * they never reach a worker: the socket is answered from here (after the answers of requests
 * pipelined before the bad one) and closed in stages (linger.ts).
 */
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { BadBodyError, BadRequestError, NotImplementedError, OmniError } from '../errors.js';
import { closeLingering } from './linger.js';
import type { ServeMetrics } from './metrics.js';
import { boundRawSend } from './send-timeout.js';
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

/**
 * `inHead`: the parser failed before the request's head was whole. The client's FIN there is
 * HPE_INVALID_EOF_STATE too, as in a body, but no body was begun: a malformed request, not body.
 */
function errorFor(code: string, message: string, inHead: boolean): Error & { detail?: string } {
  const error: Error & { detail?: string } =
    code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new OmniError('OMNI_ERR_REQUEST_TIMEOUT', 'the request was not received in time')
      : code === 'HPE_HEADER_OVERFLOW'
        ? new OmniError('OMNI_ERR_HEADERS_TOO_LARGE', 'the request headers are too large')
        : code === EOF_MID_REQUEST && inHead
          ? new BadRequestError('the request ended before its head did')
          : BODY_PARSE_ERRORS.has(code)
            ? new BadBodyError(`the request body could not be read: ${message}`)
            : new BadRequestError(`the request is not valid HTTP: ${message}`);
  error.detail = code;
  return error;
}

/**
 * Set on a socket this handler answered, to the status it sent, once that answer is all out: a
 * request already routed (its chunked body failed mid-way) then ends without its response
 * finishing, and must be recorded with that status, not as a client that left (499).
 */
export const ANSWERED_STATUS = Symbol('omni.serve.answeredStatus');
/**
 * Set with ANSWERED_STATUS, to performance.now() then: that request's time ends there, not when
 * its response closes with its connection, which lingers (up to LINGER_MS) after the answer.
 */
export const ANSWERED_AT = Symbol('omni.serve.answeredAt');

export type AnsweredSocket = Socket & { [ANSWERED_STATUS]?: number; [ANSWERED_AT]?: number };

/**
 * What the drain counts of the answers written raw here (Drain's methods of those names): an
 * answer to a request that reached no route is owed, so in flight, from when this handler takes
 * it on until it is out (discharged) or its connection closes; a routed request answered here is
 * settled once its answer is out, though its response closes only with its connection.
 */
export interface RawAnswers {
  owe(connection: Socket): void;
  discharge(connection: Socket): void;
  settle(res: ServerResponse): void;
}

/**
 * llhttp's error for bytes after a request that closes its connection (`Connection: close`, or
 * HTTP/1.0 without keep-alive). Those bytes are no request of the server's to answer (RFC 9112
 * 9.6: it answers the closing request, processes nothing after it): node closes the connection
 * after that request's own answer.
 */
const DATA_AFTER_CLOSE = 'HPE_CLOSED_CONNECTION';

/**
 * llhttp's error for the client's FIN in the middle of a request (its headers, or a body shorter
 * than announced). node takes a FIN between requests for a client that left (httpAllowHalfOpen
 * false: it aborts the requests still running, docs/limits.md: a half-closing client), but one in the
 * middle of a request comes here instead, with those requests still running.
 */
const EOF_MID_REQUEST = 'HPE_INVALID_EOF_STATE';

/** The response of the latest request node routed on a connection (see rememberResponse). */
const LATEST_RESPONSE = Symbol('omni.serve.latestResponse');
/** Set on a socket once its parser failed: llhttp stays failed and reports again on every read. */
const PARSE_FAILED = Symbol('omni.serve.parseFailed');

type ClientSocket = AnsweredSocket & {
  [LATEST_RESPONSE]?: ServerResponse;
  [PARSE_FAILED]?: true;
  _httpMessage?: ServerResponse | null;
  parser?: { incoming?: IncomingMessage | null } | null;
};

/**
 * Responses of routed requests this handler answered in their place (their bodies failed before
 * their own answers began): whatever the route decides for them is never heard.
 */
const ANSWERED_IN_PLACE = new WeakSet<ServerResponse>();

/**
 * Whether the parse error of `res`'s own request was answered in its place (its raw 400 written
 * before `res` wrote anything): what the route then decides for it (a refusal from its headers,
 * decided in the microtasks after the read that also held the malformed body) is never heard.
 */
export function answeredInPlace(res: ServerResponse): boolean {
  return ANSWERED_IN_PLACE.has(res);
}

/**
 * Whether the client-error handler took `socket` over (a parse error, or a request that did not
 * arrive in time): the request it failed in is answered with that error, never read on.
 */
export function clientFailed(socket: Socket | null): boolean {
  return (socket as ClientSocket | null)?.[PARSE_FAILED] === true;
}

/**
 * Requests node routed after an answer that closes their connection. RFC 9112 9.6: such a
 * request must not be processed. node's parser goes on through the bytes it already holds after
 * an answer sent before its request's body was read (which says Connection: close): the rest of
 * that body, then any request pipelined after it, whose answer could never be sent.
 */
const AFTER_CLOSE = new WeakSet<IncomingMessage>();

/**
 * A server 'request' listener, before fastify's (prepended: the latest response is still the
 * one before this request): marks a request routed after an answer that closes the connection,
 * or on a connection the server already ended. An answer decided in the hooks (a 405, a 415 from
 * the headers) has its head written before a request in the same bytes is routed: node's parser,
 * reading the socket itself, calls each of its callbacks from native code, and the microtasks
 * queued by one (fastify's async hooks) run before the next (seen: that head out, `_last` set).
 */
export function markAfterClose(req: IncomingMessage): void {
  const socket = req.socket as ClientSocket;
  const before = socket[LATEST_RESPONSE];
  if (socket.writableEnded || (before !== undefined && closesConnection(before))) AFTER_CLOSE.add(req);
}

/** Whether `req` came after an answer that closed its connection (see markAfterClose): never run. */
export function afterClosingAnswer(req: IncomingMessage): boolean {
  return AFTER_CLOSE.has(req);
}

/**
 * A server 'request' listener (after fastify's): remembers each connection's latest response,
 * so that a parse error in a request pipelined behind it (or in its own body, while it waits
 * behind others) is answered in order, not in the place of an earlier request's answer.
 */
export function rememberResponse(req: IncomingMessage, res: ServerResponse): void {
  // One after a closing answer is never answered: the closing one stays the last to come.
  if (AFTER_CLOSE.has(req)) return;
  (req.socket as ClientSocket)[LATEST_RESPONSE] = res;
  // 'finish' comes once: a plain listener, one function for every response, no closure each.
  res.on('finish', markFinished);
}

function markFinished(this: ServerResponse): void {
  FINISHED.add(this);
}

/**
 * Latest responses node said 'finish' for: their answer is out, and node has moved on (a closing
 * one's connection ended, lingering). Not writableFinished: node before 24.20 and 26.7 reads
 * that true as soon as its buffers are empty, a tick before 'finish' (nodejs/node#64847 made it
 * wait for 'finish'). A 417 node answers as it parses is out, its 'finish' to come, when the
 * bytes after it in the same read fail to parse: read as finished there, the connection was
 * destroyed at once and the 417 went uncounted (its count waits for 'finish' on a connection not
 * destroyed), on those nodes only.
 */
const FINISHED = new WeakSet<ServerResponse>();

function finished(res: ServerResponse): boolean {
  return FINISHED.has(res);
}

/**
 * Whether a request was routed on `req`'s connection after it: its answer comes after `res`'s,
 * so an answer that closes the connection is that one's, not `res`'s.
 */
export function answeredLater(req: IncomingMessage, res: ServerResponse): boolean {
  const latest = (req.socket as ClientSocket | null)?.[LATEST_RESPONSE];
  return latest !== undefined && latest !== res;
}

/**
 * Whether a write callback (an answer's last) says it is out (handed to the kernel). Not when its
 * connection is destroyed by then: once it is, node calls back a write the kernel had not taken
 * yet (stream_base_commons' onWriteComplete) with no error before node 22.9, with ECANCELED since
 * (nodejs/node#54032), and the drain or the send timeout cutting off an answer a client does not
 * read is just that.
 */
function answerOut(connection: Socket, err?: Error | null): boolean {
  return err == null && !connection.destroyed;
}

function errorAnswer(code: string, message: string, inHead: boolean): { status: number; text: string } {
  return rawAnswer(errorFor(code, message, inHead));
}

/** A whole JSON answer that closes the connection, written on a socket node no longer answers on. */
function rawAnswer(error: Error): { status: number; text: string } {
  const answer = answerFor(error);
  const body = JSON.stringify(answer.body);
  return {
    status: answer.status,
    text:
      `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  };
}

/**
 * A server 'clientError' listener: one JSON answer, then close. The answer keeps the requests'
 * order: an error in a request pipelined behind requests still being answered waits for their
 * answers; otherwise it is answered at once if nothing was sent yet. Counted (client errors, by
 * parser code) once its answer is out (handed to the kernel), as a CONNECT's and an Expect's
 * are: an error that is never answered (the client left first, an answer before it closed the
 * connection, its own answer had already begun, the drain or the send timeout cut it off while
 * it was still in this process) is not in the count of requests answered that way. Its answer
 * must be out within `sendTimeoutMs`, as any other (send-timeout.ts).
 */
export function clientErrorHandler(
  metrics: ServeMetrics,
  answers: RawAnswers,
  sendTimeoutMs = Number.POSITIVE_INFINITY,
): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    const s = socket as ClientSocket;
    // A reset connection has nobody to answer; one whose answers ended it (it lingers, see
    // linger.ts) has nothing more to say: what the client still sends is dropped unread.
    if (err.code === 'ECONNRESET' || s.destroyed || s.writableEnded || s[PARSE_FAILED] === true) return;
    s[PARSE_FAILED] = true;
    const code = err.code ?? 'unknown';
    // Whether every request routed so far was read whole: the error is then in bytes after them
    // (a head not yet whole), not in a body.
    const readWhole = s.parser?.incoming?.complete !== false;
    const answerNow = (): void => {
      const answer = errorAnswer(code, err.message, readWhole);
      // The request may already be routed (a chunked body fails mid-way): answer only if its
      // response has not started, as node:http's own default handler does.
      const routed = s._httpMessage ?? null;
      if (s.writable && routed?.headersSent !== true) {
        // A routed request is in flight already (its response tracked); one that reached no
        // route is from here.
        if (routed === null) answers.owe(s);
        else ANSWERED_IN_PLACE.add(routed);
        // Its status once all of it is out (handed to the kernel): held in this process by a
        // client that does not read, it never reached that client if the drain or the send
        // timeout then closes the connection, which is recorded as such (444), and the write
        // fails.
        s.write(answer.text, (err) => {
          if (!answerOut(s, err)) return;
          metrics.clientError(code);
          s[ANSWERED_STATUS] = answer.status;
          s[ANSWERED_AT] = performance.now();
          if (routed === null) answers.discharge(s);
          else answers.settle(routed);
        });
        boundRawSend(s, sendTimeoutMs);
        // Not destroyed at once: bytes the client sent after the bad ones would still be unread,
        // and closing over unread bytes resets the connection, which can make the client fail
        // on its upload before it reads this answer. The linger is bounded (linger.ts).
        closeLingering(s);
        return;
      }
      s.destroy(err);
    };
    const latest = s[LATEST_RESPONSE];
    if (latest === undefined || finished(latest) || latest.destroyed) {
      answerNow();
      return;
    }
    // The client left mid-request while an earlier request's answer is still owed (the latest
    // one's, or one the latest, truncated, waits behind): taken as node takes a FIN, the
    // connection is closed unanswered and uncounted, so the calls still running are aborted
    // (499) rather than run for nobody, the connection held until a server timeout. A FIN in
    // the one request owed (no answer before it) is still answered 400: it is what the client
    // sent, and a client that only half-closed reads it.
    if (code === EOF_MID_REQUEST && (readWhole || latest.socket === null)) {
      s.destroy();
      return;
    }
    if (readWhole) {
      // Every request routed so far was read whole: the error is in bytes after them, and the
      // latest one's answer must come first. Bytes after a closing request are not counted:
      // the connection is not closed for them, nor answered 400.
      if (code === DATA_AFTER_CLOSE) return;
      // Owed (in flight) while it waits: a drain that cuts the answers before it off cuts it
      // off too.
      answers.owe(s);
      latest.once('close', () => {
        // Finished: the connection is in step, answer, unless that answer closed it (node ended
        // it: a connection's last answer does while the server drains). Not finished: the
        // client left, or the connection was cut off.
        if (finished(latest) && s.writable) {
          s.write(errorAnswer(code, err.message, true).text, (err) => {
            if (!answerOut(s, err)) return;
            metrics.clientError(code);
            answers.discharge(s);
          });
          boundRawSend(s, sendTimeoutMs);
          closeLingering(s);
          return;
        }
        if (finished(latest)) answers.discharge(s);
        s.destroy(err);
      });
      return;
    }
    if (latest.socket !== null) {
      answerNow();
      return;
    }
    // The latest request's body failed while its answer waits behind earlier ones: the error
    // answer takes its place when its turn comes, unless it was answered before its body was
    // read (that answer says Connection: close, and node closes after it).
    const onSocket = (): void => {
      latest.removeListener('close', forget);
      if (!latest.headersSent) answerNow();
    };
    const forget = (): void => {
      latest.removeListener('socket', onSocket);
    };
    latest.once('socket', onSocket);
    latest.once('close', forget);
  };
}

/**
 * A server 'checkExpectation' listener: an `Expect` header other than 100-continue is answered
 * 417 in JSON like every other error (node:http's own answer has no body), then closed. Such a
 * request never reaches a route.
 */
export function expectationHandler(
  metrics: ServeMetrics,
  follow: (req: IncomingMessage, res: ServerResponse) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    // node calls this listener instead of 'request' (and its listeners, markAfterClose's): the
    // 417 is the connection's latest answer, and one that closes it, so a parse error pipelined
    // behind must wait for it (and add none).
    markAfterClose(req);
    rememberResponse(req, res);
    // After an answer that closed the connection it is never sent: neither in flight nor
    // recorded, as a request routed there is not (RFC 9112 9.6).
    if (!afterClosingAnswer(req)) follow(req, res);
    // Counted once out: a 417 queued behind a call still running goes unanswered when the
    // client leaves first; node before 24.20 and 26.7 says 'finish' for one the drain or the send
    // timeout cut off (see answerOut; 24.20+ and 26.7+ say none, nodejs/node#64847).
    const connection = req.socket;
    res.once('finish', () => {
      if (answerOut(connection)) metrics.clientError('EXPECTATION_FAILED');
    });
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

/**
 * A server 'connect' listener: a CONNECT asks for a tunnel, and this server is no proxy. node
 * hands such a connection over to 'connect' listeners, and with none destroys it unanswered.
 * Answered 501 in JSON here, after the answers of requests pipelined before it, then closed in
 * stages (linger.ts): what the client sends after it is not HTTP to parse. `adopt` hands the
 * connection to what closes connections at a drain (Drain.adopt), as node no longer does. The
 * 501 must be out within `sendTimeoutMs`, as any other answer (send-timeout.ts).
 */
export function connectHandler(
  metrics: ServeMetrics,
  adopt: (socket: Socket) => void,
  answers: RawAnswers,
  sendTimeoutMs = Number.POSITIVE_INFINITY,
): (req: IncomingMessage, socket: Socket) => void {
  return (_req, socket) => {
    const s = socket as ClientSocket;
    // node no longer tracks it: its server's closeAllConnections does not reach it.
    adopt(s);
    // node takes its own 'error' listener off a connection it hands over: without one, a client
    // that resets it (while an answer before the CONNECT is written, or while the close lingers)
    // would be an uncaught exception, the end of the process.
    s.on('error', () => s.destroy());
    const answer = (): void => {
      if (!s.writable) {
        s.destroy();
        return;
      }
      // Counted once out (handed to the kernel), as a raw 400 is.
      s.write(
        rawAnswer(new NotImplementedError('CONNECT is not supported: this server is not a proxy')).text,
        (err) => {
          if (!answerOut(s, err)) return;
          metrics.clientError('CONNECT');
          answers.discharge(s);
        },
      );
      boundRawSend(s, sendTimeoutMs);
      closeLingering(s);
    };
    const latest = s[LATEST_RESPONSE];
    const pending = latest !== undefined && !latest.destroyed && !finished(latest);
    // After an answer that closes the connection nothing is answered, nor counted (RFC 9112
    // 9.6): node closes the connection after it, lingering.
    if (latest !== undefined && finished(latest) && closesConnection(latest)) return;
    // In flight until its answer is out (or the connection closes): a drain waits for it, and
    // one that cuts it off has abandoned it.
    answers.owe(s);
    if (!pending) {
      answer();
      return;
    }
    // node stops reading a connection it hands over: a client that left now (its FIN) would go
    // unheard, and the call still running before the CONNECT would run on for nobody. Read and
    // drop what comes (a tunnel's bytes are not HTTP); the client's end is taken as its leaving,
    // as node takes it on any other connection (docs/limits.md: a half-closing client).
    s.on('data', () => {});
    s.once('end', () => s.destroy());
    s.resume();
    // Finished: the answers before it are out, answer (unless the last one closed the
    // connection, as a connection's last answer does while the server drains). Not finished:
    // the client left, unanswered and so uncounted.
    latest.once('close', () => {
      if (finished(latest) && closesConnection(latest)) {
        answers.discharge(s);
        return;
      }
      if (finished(latest)) answer();
      else s.destroy();
    });
  };
}

/** Whether node closes the connection after this answer (it said `Connection: close`). */
export function closesConnection(res: ServerResponse): boolean {
  return (res as ServerResponse & { _last?: boolean })._last === true;
}
