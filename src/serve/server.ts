/**
 * `serve(runtime, options)`: a LinearRuntime behind HTTP (fastify), on loopback by default.
 *
 * Routes: POST /v1/linear (linear-route.ts), GET /health (health-route.ts), GET /metrics
 * (metrics-route.ts); another method on one of their paths is a 405 (method-not-allowed.ts), an
 * unknown path a 404. Body limits, content parsing and their 413/400/415 come from fastify;
 * every error answer goes through the one status table (status.ts); requests node:http cannot
 * parse, and CONNECT, are answered by client-error.ts; a connection an answer ends closes in stages
 * (linger.ts); shutdown is drain.ts. A slow client is bounded by node:http's request timeout
 * (request-timeout.ts: fastify turns it off) and by send-timeout.ts.
 *
 * Throws: InvalidArgumentError for a bad option or runtime; whatever listening throws (EADDRINUSE,
 * ...), on any address of host 'localhost' (missed-binding.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import {
  BadRequestError,
  describeValue,
  InvalidArgumentError,
  NotFoundError,
  UnavailableError,
} from '../errors.js';
import { kRowsRefusal, type LinearRuntime } from '../linear/linear-runtime.js';
import { MAX_FEATURES } from '../native/abi.js';
import { checkOptionKeys, type OptionKeys } from '../option-keys.js';
import type { RuntimeReport } from '../runtime.js';
import { answerLeft } from './answer-left.js';
import { notUtf8Json, OCTET_STREAM } from './body.js';
import {
  ANSWERED_AT,
  ANSWERED_STATUS,
  type AnsweredSocket,
  afterClosingAnswer,
  answeredInPlace,
  answeredLater,
  clientErrorHandler,
  connectHandler,
  expectationHandler,
  markAfterClose,
  rememberResponse,
} from './client-error.js';
import { OpenConnections } from './connections.js';
import { DRAIN_KEYS, Drain, type DrainOptions, type DrainResult, type ServerState } from './drain.js';
import { continueOwed, continueWhenRead, deferContinue } from './expect-continue.js';
import { healthRoute } from './health-route.js';
import { abandonedByDrain, linearRoute } from './linear-route.js';
import { lingerOnClose } from './linger.js';
import { listeningServers } from './listeners.js';
import { refuseOtherMethods } from './method-not-allowed.js';
import { CUT_OFF_STATUS, ServeMetrics } from './metrics.js';
import { metricsRoute } from './metrics-route.js';
import { missedBinding } from './missed-binding.js';
import { closedByEarlierAnswer, closeWithConnection, noteClosingAnswer } from './pipelined-close.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, httpTimeouts } from './request-timeout.js';
import { boundSend, DEFAULT_SEND_TIMEOUT_MS, sendTimedOut } from './send-timeout.js';
import { answerFor, fromHttpStack } from './status.js';
import { UnreadNotFound } from './unread-not-found.js';

/**
 * What the server needs of a LinearRuntime, and all it reads of one (serve() reads and checks
 * the five members once, and calls the methods it checked; tests wrap any Runtime in one). Its
 * `deadlineMs`, the default deadline of its calls, bounds what a client's deadline may ask for.
 */
export type Served = Pick<LinearRuntime, 'run' | 'report' | 'close' | 'inFeatures' | 'outFeatures'> &
  Partial<Pick<LinearRuntime, 'deadlineMs'>>;

/**
 * serve()'s options, each read once; an unknown key or a bad value rejects serve() with
 * OMNI_ERR_INVALID_ARGUMENT before anything listens.
 */
export interface ServeOptions {
  /** Interface to listen on (default 127.0.0.1: loopback only; 'localhost': each address it names). */
  readonly host?: string | undefined;
  /** Port, an integer 0..65535 (default 8080; 0 picks a free one, see ServeHandle.port). */
  readonly port?: number | undefined;
  /**
   * Largest request body in bytes, an integer 1..2^31 - 1 (default 8 MiB); larger ones are
   * answered 413.
   */
  readonly bodyLimit?: number | undefined;
  /**
   * Deadline for every call in milliseconds, > 0 (default: the runtime's own; Infinity: none, even
   * where the runtime has a default). A client's x-omni-deadline-ms may shorten it, never
   * lengthen it.
   */
  readonly deadlineMs?: number | undefined;
  /** Retry-After, in whole seconds 0..86,400, on a 503 for full capacity (default 1). */
  readonly retryAfterSeconds?: number | undefined;
  /**
   * How long a drain waits for in-flight work before abandoning it, in milliseconds >= 0
   * (default 10 s; 0: abandons it
   * at once, as Runtime.close's 0 does; Infinity: no limit).
   */
  readonly drainTimeoutMs?: number | undefined;
  /**
   * How long a request may take to arrive, from its first byte to its body's last, in
   * milliseconds > 0 (default 300 s; Infinity: no limit; node:http counts whole milliseconds, so
   * under 1 is 1); its headers get the lesser of this and 60 s. One later is answered 408 and its
   * connection closed. The work a request starts is not bounded by it.
   */
  readonly requestTimeoutMs?: number | undefined;
  /**
   * How long an answer, once written, may take to leave: a client that does not read it for
   * this long has its connection closed (milliseconds > 0; default 300 s; Infinity: no limit).
   */
  readonly sendTimeoutMs?: number | undefined;
  /** Close the runtime when the server drains (default true: the server owns it). */
  readonly closeRuntime?: boolean | undefined;
}

const SERVE_KEYS: OptionKeys<ServeOptions> = {
  host: true,
  port: true,
  bodyLimit: true,
  deadlineMs: true,
  retryAfterSeconds: true,
  drainTimeoutMs: true,
  requestTimeoutMs: true,
  sendTimeoutMs: true,
  closeRuntime: true,
};

/** A listening server, from serve(). */
export interface ServeHandle {
  /** The fastify instance that serves the routes. */
  readonly app: FastifyInstance;
  /** `http://host:port` as listened on. */
  readonly address: string;
  /**
   * The address it listens on as node reports it: a name resolved ('localhost': its first
   * address, such as 127.0.0.1 or ::1).
   */
  readonly host: string;
  /** The port it listens on: the one picked when 0 was asked for. */
  readonly port: number;
  /** The server's Prometheus metrics, as GET /metrics serves them. */
  readonly metrics: ServeMetrics;
  /** 'serving', then 'draining' once a drain begins, then 'closed' once it ends. */
  readonly state: ServerState;
  /**
   * Graceful shutdown (drain.ts); runs once, later calls share its result. The listener is
   * closed before this returns: connections attempted afterwards are refused.
   */
  drain(options?: DrainOptions): Promise<DrainResult>;
  /** Cuts a drain's wait for in-flight requests short (a second SIGINT). */
  expireDrain(): void;
  /** The same as drain() with the default timeout. */
  close(): Promise<DrainResult>;
}

/** ServeOptions.bodyLimit's default: 8 MiB, in bytes. */
export const DEFAULT_BODY_LIMIT = 8 * 1024 * 1024;
/** ServeOptions.drainTimeoutMs's default: 10 s, in milliseconds. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 10_000;

function integer(
  name: string,
  value: number | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(
      `${name} must be an integer from ${min} to ${max}, got ${describeValue(value)}`,
    );
  }
  return value;
}

/** A time option: any number > 0, as the runtime takes its timeouts (Infinity: none). */
function duration(name: string, value: number | undefined): number | undefined {
  if (value !== undefined && !(typeof value === 'number' && value > 0)) {
    throw new InvalidArgumentError(`${name} must be a number > 0, got ${describeValue(value)}`);
  }
  return value;
}

/**
 * A drain's timeout: any number >= 0, as Runtime.close takes its own (0: work still in flight
 * is abandoned at once; Infinity: none).
 */
function drainTimeout(name: string, value: number | undefined): number | undefined {
  if (value !== undefined && !(typeof value === 'number' && value >= 0)) {
    throw new InvalidArgumentError(`${name} must be a number >= 0, got ${describeValue(value)}`);
  }
  return value;
}

/** How many Host field lines a request carries (rawHeaders alternates names and values). */
function hostLines(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]?.toLowerCase() === 'host') count++;
  return count;
}

/**
 * Answered before its body was read: node would go on reading that body on a kept-alive
 * connection, and a malformed rest of it would get a second, unasked answer.
 */
function closeIfUnread(request: IncomingMessage, reply: FastifyReply): void {
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

/** The 404 of a request for a path, or a method, no route serves. */
function notFound(request: FastifyRequest): NotFoundError {
  return new NotFoundError(`no route for ${request.method} ${request.url.split('?')[0]}`);
}

/** Answers the 404 of a request for a path, or a method, no route serves. */
function sendNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const answer = answerFor(notFound(request));
  return reply.code(answer.status).send(answer.body);
}

/** The layer's shape, as serve() read and checked it once. */
interface Widths {
  readonly inFeatures: number;
  readonly outFeatures: number;
}

/**
 * What serve() needs of its runtime, checked before anything listens: a server over something
 * else would answer every request with a 500 (and null met its first read as an uncoded TypeError).
 * Each member is read here once, and the server uses what was checked: the widths as read, and
 * the functions called as the runtime's methods. Read again per request, a getter could answer
 * otherwise than what was checked, and so could a method a later option's getter replaced:
 * every call, health check or drain then failed on a runtime that had passed.
 */
function checkServed(runtime: Served): { served: Served; widths: Widths } {
  const r = runtime as Partial<Record<keyof Served, unknown>> | null;
  const width = (value: unknown): value is number =>
    typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_FEATURES;
  if (typeof r === 'object' && r !== null) {
    const { run, report, close, inFeatures, outFeatures } = r;
    if (
      typeof run === 'function' &&
      typeof report === 'function' &&
      typeof close === 'function' &&
      width(inFeatures) &&
      width(outFeatures)
    ) {
      const served: Served & Pick<LinearRuntime, typeof kRowsRefusal> = {
        run: (...args) => Reflect.apply(run, runtime, args),
        report: () => Reflect.apply(report, runtime, []),
        close: (...args) => Reflect.apply(close, runtime, args),
        inFeatures,
        outFeatures,
        // A LinearRuntime's own, found on it per request as before: absent on a test's wrapper.
        [kRowsRefusal]: (rows) => (runtime as Partial<LinearRuntime>)[kRowsRefusal]?.(rows),
      };
      return { served, widths: { inFeatures, outFeatures } };
    }
  }
  throw new InvalidArgumentError(
    `serve needs a LinearRuntime (run, report, close, inFeatures, outFeatures), got ${describeValue(runtime)}`,
  );
}

/**
 * Serves a LinearRuntime over HTTP (POST /v1/linear, GET /health, GET /metrics) and resolves
 * once it listens. Rejects, leaving the runtime open, with OMNI_ERR_INVALID_ARGUMENT for a bad
 * option or runtime, or with what listening throws (EADDRINUSE, ...).
 */
export async function serve(runtime: Served, options: ServeOptions = {}): Promise<ServeHandle> {
  const { served, widths } = checkServed(runtime);
  checkOptionKeys('serve options', options, SERVE_KEYS);
  // Only undefined takes the default, as for every other option: null is a mistake.
  const { host: givenHost } = options;
  const host = givenHost === undefined ? '127.0.0.1' : givenHost;
  if (typeof host !== 'string' || host === '') {
    throw new InvalidArgumentError(`host must be a non-empty string, got ${describeValue(host)}`);
  }
  const port = integer('port', options.port, 8080, 0, 65535);
  const bodyLimit = integer('bodyLimit', options.bodyLimit, DEFAULT_BODY_LIMIT, 1, 2 ** 31 - 1);
  const retryAfter = integer('retryAfterSeconds', options.retryAfterSeconds, 1, 0, 86_400);
  const drainTimeoutMs = drainTimeout('drainTimeoutMs', options.drainTimeoutMs) ?? DEFAULT_DRAIN_TIMEOUT_MS;
  const requestTimeoutMs =
    duration('requestTimeoutMs', options.requestTimeoutMs) ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const sendTimeoutMs = duration('sendTimeoutMs', options.sendTimeoutMs) ?? DEFAULT_SEND_TIMEOUT_MS;
  // The runtime's default is the ceiling too: a client's deadline replaces it in run().
  // Infinity means none, as for the runtime: kept as Infinity (not undefined) so that it lifts
  // a default the runtime has, and a client's deadline still shortens it.
  const deadlineMs = duration('deadlineMs', options.deadlineMs) ?? runtime.deadlineMs;
  // Read as `!== false`, a 0 or a 'false' from a config file would close the caller's runtime.
  // Read once: a getter could answer false to the check and 0 to the use.
  const closeRuntime: unknown = options.closeRuntime;
  if (closeRuntime !== undefined && typeof closeRuntime !== 'boolean') {
    throw new InvalidArgumentError(`closeRuntime must be a boolean, got ${describeValue(closeRuntime)}`);
  }
  const settings: Settings = {
    host,
    port,
    bodyLimit,
    retryAfter,
    drainTimeoutMs,
    requestTimeoutMs,
    sendTimeoutMs,
    deadlineMs,
    closeRuntime: closeRuntime !== false,
    widths,
  };
  for (let attempt = 1; ; attempt++) {
    const listened = await listenOnce(served, settings);
    if (!('missed' in listened)) return listened.handle;
    // Port 0 asks for a port free on every address: the one the kernel found free on the first
    // was not on another (missed-binding.ts), so it picks again. A port given is refused.
    if (port !== 0 || attempt === LISTEN_ATTEMPTS) throw listened.missed;
  }
}

/** How often port 0 is tried again when the port picked is taken on another address. */
const LISTEN_ATTEMPTS = 8;

interface Settings {
  readonly host: string;
  readonly port: number;
  readonly bodyLimit: number;
  readonly retryAfter: number;
  readonly drainTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly sendTimeoutMs: number;
  readonly deadlineMs: number | undefined;
  readonly closeRuntime: boolean;
  readonly widths: Widths;
}

/**
 * One server, listening on every usable address of the host, or closed again with the listen
 * error of an address it missed (the first address's own error is thrown).
 */
async function listenOnce(
  runtime: Served,
  {
    host,
    port,
    bodyLimit,
    retryAfter,
    drainTimeoutMs,
    requestTimeoutMs,
    sendTimeoutMs,
    deadlineMs,
    closeRuntime,
    widths,
  }: Settings,
): Promise<{ handle: ServeHandle } | { missed: NodeJS.ErrnoException }> {
  const connections = new OpenConnections();
  const unreadNotFound = new UnreadNotFound();
  const drain = new Drain(closeRuntime ? runtime : undefined, () => connections.allClosed());
  // Requests are heard once the first address listens, before every address is known to be
  // bound: they wait for that. On a server torn down then they are refused (503, their
  // connections closed): the runtime serve() hands back was never used, and no kept-alive
  // connection holds the teardown (app.close() waited for the client to leave, ~72 s).
  let started = false;
  let confirm!: (started: boolean) => void;
  const confirmed = new Promise<boolean>((resolve) => {
    confirm = resolve;
  });
  const report = (): RuntimeReport => {
    const r = runtime.report();
    // A draining server is not ready, whatever the runtime says until it is closed. (The
    // report is a fresh object; a spread would also read its costly latency getters.)
    if (drain.state !== 'serving' && r.state === 'ready') r.state = 'draining';
    return r;
  };
  const metrics = new ServeMetrics({
    report,
    inflight: () => drain.inflight,
    connections: () => connections.count,
  });
  const clientErrors = clientErrorHandler(metrics, drain, sendTimeoutMs);
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
   * The status recorded for a finished answer: node says 'finish' also for an answer whose
   * connection was destroyed while it was still being sent: one the send timeout or the drain
   * cut off was never received.
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
  const timeouts = httpTimeouts(requestTimeoutMs);
  const app = Fastify({
    logger: false,
    bodyLimit,
    // fastify's own default (0) turns node's request timeout off: a client that stalls
    // mid-upload, or trickles its body, held its connection and the body read so far for good.
    requestTimeout: timeouts.request,
    http: {
      // The Host check is the onRequest hook's, which answers in this server's JSON.
      requireHostHeader: false,
      requestTimeout: timeouts.request,
      headersTimeout: timeouts.headers,
      connectionsCheckingInterval: timeouts.check,
    },
    clientErrorHandler: clientErrors,
    // Errors fastify answers before routing (a malformed URL: FST_ERR_BAD_URL) skip the error
    // handler and every hook: answer through the same status table, and count them here.
    frameworkErrors: (error, request, reply) => {
      // After an answer that closed the connection: never answered or counted, as in onRequest.
      if (afterClosingAnswer(request.raw)) return;
      const answer = answerFor(fromHttpStack(error, bodyLimit));
      const answered = reply as unknown as FastifyReply;
      // In flight and recorded as every other request (no hook runs here): recorded when the
      // answer was written, one queued behind an unread answer that the drain (or a send
      // timeout) then cut off stayed a 400 never sent, outside the gauge and the drain's count.
      follow(request as unknown as FastifyRequest, answered);
      answered.raw.once('finish', () => {
        record(
          answered.raw,
          'unmatched',
          request.method,
          finishedStatus(answered.raw, request.raw.socket),
          answered.elapsedTime / 1000,
        );
      });
      closeIfUnread(request.raw, answered);
      void answered.code(answer.status).send(answer.body);
    },
  });

  const onExpectation = expectationHandler(metrics, followExpectation);
  const onConnect = connectHandler(metrics, (socket) => drain.adopt(socket), drain, sendTimeoutMs);
  app.server.on('checkExpectation', onExpectation);
  app.server.on('connect', onConnect);
  app.server.on('checkContinue', deferContinue);
  app.server.prependListener('request', markAfterClose);
  app.server.on('request', rememberResponse);
  app.server.on('connection', lingerOnClose);
  app.server.on('connection', connections.add);
  continueWhenRead(app, bodyLimit);
  // Fastify's default text/plain parser would hand the route a string: refuse it as 415 instead.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser(OCTET_STREAM, { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  // fastify's own JSON parser (prototype-poisoning checks kept), after a check of the encoding.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const wrong = notUtf8Json(body as Buffer);
    if (wrong) return done(wrong, undefined);
    parseJson(request, (body as Buffer).toString('utf8'), done);
  });

  app.addHook('onRequest', async (request, reply) => {
    // After an answer that closed the connection: never run, answered or counted (RFC 9112 9.6),
    // as node drops the bytes after a client's own closing request. The connection is closing.
    if (afterClosingAnswer(request.raw)) {
      reply.hijack();
      return;
    }
    follow(request, reply);
    // RFC 9112 6.1: no Transfer-Encoding in an answer to HTTP/1.0, which node sends one that
    // lists TE: chunked (a streamed answer, json-answer.ts); without it, the close ends the body.
    if (request.raw.httpVersionMajor === 1 && request.raw.httpVersionMinor === 0) {
      reply.raw.useChunkedEncodingByDefault = false;
    }
    // RFC 9112 3.2: an HTTP/1.1 request without Host is a 400. node's own check (turned off
    // above) answered it without this server's JSON body, and uncounted.
    const raw = request.raw;
    if (raw.httpVersionMajor === 1 && raw.httpVersionMinor === 1 && raw.headers.host === undefined) {
      throw new BadRequestError('an HTTP/1.1 request must carry a Host header');
    }
    // The same rule: more than one Host is a 400. node keeps the first and drops the others, so
    // a proxy in front that routed by another one would disagree with this server about it.
    if (hostLines(raw.rawHeaders) > 1) {
      throw new BadRequestError('a request must carry one Host header, not several');
    }
    if (!started && !(await confirmed)) {
      reply.raw.shouldKeepAlive = false;
      throw new UnavailableError('starting', 'the server did not start');
    }
    // A draining server closes every connection after its answer: a 404's body, read while
    // serving so that its connection can go on, would be read for nothing (unread-not-found.ts).
    if (request.is404) {
      if (drain.state !== 'serving') throw notFound(request);
      unreadNotFound.add(request, reply);
    }
  });
  app.addHook('onResponse', async (request, reply) => {
    record(
      reply.raw,
      request.routeOptions.url ?? 'unmatched',
      request.method,
      finishedStatus(reply.raw, request.raw.socket),
      reply.elapsedTime / 1000,
    );
  });
  // Every answer, errors (415, 413, draining) and GETs whose body nobody reads included.
  app.addHook('onSend', (request, reply, payload, done) => {
    closeIfUnread(request.raw, reply);
    // While draining, every connection closes after its last answer, those of requests that
    // came before the drain too: a client reusing a kept-alive one would be reset when the
    // drain ends. Not after an earlier one: node would drop the answers of the requests
    // pipelined behind it, already admitted, and abort their work (nor after one answered
    // before the drain, queued behind this one: its head is written, saying keep-alive).
    if (drain.state !== 'serving' && !answeredLater(request.raw, reply.raw)) {
      reply.header('connection', 'close');
    }
    // fastify closes the connection after every body parser error, even one found once the
    // whole body was read (malformed JSON): node still runs the requests pipelined behind it,
    // whose answers that close would then drop (RFC 9112 9.6: such requests must not run).
    // Not when node closes after the answer anyway (a 100 Continue owed): the answer says so.
    if (
      request.raw.complete &&
      drain.state === 'serving' &&
      reply.getHeader('connection') === 'close' &&
      !continueOwed(request.raw, reply.raw)
    ) {
      takeBackClose(reply);
    }
    done(null, payload);
  });
  app.setErrorHandler(async (error, _request, reply) => {
    const answer = answerFor(fromHttpStack(error, bodyLimit));
    if (answer.retry) reply.header('retry-after', String(retryAfter));
    // A refusal whose request's body failed first, its 400 answered in its place, is no
    // refusal the client heard: that 400 is counted (a client error), this is not.
    const refusal = (answer.status === 413 || answer.status === 503) && !abandonedByDrain(error);
    if (refusal && !answeredInPlace(reply.raw)) metrics.refused(answer.label, answer.status);
    return reply.code(answer.status).send(answer.body);
  });
  app.setNotFoundHandler(async (request, reply) => sendNotFound(request, reply));

  refuseOtherMethods(app, () => {
    linearRoute(app, { runtime, ...widths, drain, deadlineMs, bodyLimit });
    healthRoute(app, report);
    metricsRoute(app, metrics);
  });

  try {
    await app.listen({ host, port });
  } catch (err) {
    confirm(false);
    await app.close();
    throw err;
  }
  // fastify gives only its main server our clientError handler; the others answer the same.
  // At once, not once every address is known to be bound (missedBinding's lookup and probes take
  // turns of the event loop, which accept connections on them): fastify's listen() resolves in
  // the turn its last server began listening, before any connection there could be accepted.
  for (const other of listeningServers(app).slice(1)) {
    // fastify forwards their 'upgrade' to the main server, which has no listener: node would
    // hand a request asking to upgrade over to nobody, never answered. Without a listener it
    // is answered as any other, as on the main server.
    other.removeAllListeners('upgrade');
    other.on('clientError', clientErrors);
    other.on('checkExpectation', onExpectation);
    other.on('connect', onConnect);
    other.on('checkContinue', deferContinue);
    other.prependListener('request', markAfterClose);
    other.on('request', rememberResponse);
    other.on('connection', lingerOnClose);
    other.on('connection', connections.add);
  }
  const missed = await missedBinding(app, host, (app.server.address() as AddressInfo).port);
  if (missed !== undefined) {
    confirm(false);
    await app.close();
    return { missed };
  }
  started = true;
  confirm(true);
  // The drain begins (its state 'draining', so each answer closes its connection), then the
  // 404s whose body is still arriving are answered without it.
  const startDrain = (timeoutMs: number): Promise<DrainResult> => {
    const result = drain.start(app, timeoutMs);
    unreadNotFound.answerAll(sendNotFound);
    return result;
  };
  const bound = app.server.address() as AddressInfo;
  const shownHost = bound.address.includes(':') ? `[${bound.address}]` : bound.address;
  const handle: ServeHandle = {
    app,
    address: `http://${shownHost}:${bound.port}`,
    host: bound.address,
    port: bound.port,
    metrics,
    get state() {
      return drain.state;
    },
    drain: (drainOptions = {}) => {
      let timeoutMs: number;
      try {
        checkOptionKeys('drain options', drainOptions, DRAIN_KEYS);
        timeoutMs = drainTimeout('timeoutMs', drainOptions.timeoutMs) ?? drainTimeoutMs;
      } catch (err) {
        // Rejected, as Runtime.close's are: a caller's .catch() hears it, not its own frame.
        return Promise.reject(err);
      }
      return startDrain(timeoutMs);
    },
    expireDrain: () => drain.expire(),
    close: () => startDrain(drainTimeoutMs),
  };
  return { handle };
}
