/**
 * `serve(runtime, options)`: a LinearRuntime behind HTTP (fastify), on loopback by default.
 *
 * Routes: POST /v1/linear (linear-route.ts), GET /health (health-route.ts), GET /metrics
 * (metrics-route.ts); another method on one of their paths is a 405 (method-not-allowed.ts), an
 * unknown path a 404. Body limits, content parsing and their 413/400/415 come from fastify;
 * every error answer goes through the one status table (status.ts); requests node:http cannot
 * parse, and CONNECT, are answered by client-error.ts; a connection an answer ends closes in stages
 * (linger.ts); shutdown is drain.ts. A slow client is bounded by node:http's request timeout
 * (request-timeout.ts: fastify turns it off) and by send-timeout.ts. The options are read once
 * (serve-options.ts), the runtime checked once (served.ts); each response is counted and
 * recorded by recorded-responses.ts, and its Connection header set by connection-header.ts.
 *
 * Throws: InvalidArgumentError for a bad option or runtime; whatever listening throws (EADDRINUSE,
 * ...), on any address of host 'localhost' (missed-binding.ts).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { UnavailableError } from '../errors.js';
import { checkOptionKeys } from '../option-keys.js';
import type { RuntimeReport } from '../runtime.js';
import { notUtf8Json, OCTET_STREAM } from './body.js';
import {
  afterClosingAnswer,
  answeredInPlace,
  clientErrorHandler,
  connectHandler,
  expectationHandler,
  markAfterClose,
  rememberResponse,
} from './client-error.js';
import { closeIfUnread, connectionAfterAnswer } from './connection-header.js';
import { OpenConnections } from './connections.js';
import { DRAIN_KEYS, Drain, type DrainOptions, type DrainResult, type ServerState } from './drain.js';
import { drainingReport } from './draining-report.js';
import { continueWhenRead, deferContinue } from './expect-continue.js';
import { checkHeaderLines } from './header-lines.js';
import { healthRoute } from './health-route.js';
import { checkHost } from './host-header.js';
import { abandonedByDrain, linearRoute } from './linear-route.js';
import { lingerOnClose } from './linger.js';
import { listeningServers } from './listeners.js';
import { refuseOtherMethods } from './method-not-allowed.js';
import { ServeMetrics } from './metrics.js';
import { metricsRoute } from './metrics-route.js';
import { missedBinding } from './missed-binding.js';
import { notFound, sendNotFound } from './not-found.js';
import { recordedResponses } from './recorded-responses.js';
import { httpTimeouts } from './request-timeout.js';
import { drainTimeout, type ServeOptions, type Settings, serveSettings } from './serve-options.js';
import { checkServed, type Served } from './served.js';
import { answerFor, fromHttpStack } from './status.js';
import { UnreadNotFound } from './unread-not-found.js';

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

/**
 * Serves a LinearRuntime over HTTP (POST /v1/linear, GET /health, GET /metrics) and resolves
 * once it listens. Rejects, leaving the runtime open, with OMNI_ERR_INVALID_ARGUMENT for a bad
 * option or runtime, or with what listening throws (EADDRINUSE, ...).
 */
export async function serve(runtime: Served, options: ServeOptions = {}): Promise<ServeHandle> {
  const { served, widths } = checkServed(runtime);
  const settings = serveSettings(runtime, widths, options);
  for (let attempt = 1; ; attempt++) {
    const listened = await listenOnce(served, settings);
    if (!('missed' in listened)) return listened.handle;
    // Port 0 asks for a port free on every address: the one the kernel found free on the first
    // was not on another (missed-binding.ts), so it picks again. A port given is refused.
    if (settings.port !== 0 || attempt === LISTEN_ATTEMPTS) throw listened.missed;
  }
}

/** How often port 0 is tried again when the port picked is taken on another address. */
const LISTEN_ATTEMPTS = 8;

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
    // A draining server is not ready, whatever the runtime says until it is closed.
    return drain.state !== 'serving' && r.state === 'ready' ? drainingReport(r) : r;
  };
  const metrics = new ServeMetrics({
    report,
    inflight: () => drain.inflight,
    connections: () => connections.count,
  });
  const clientErrors = clientErrorHandler(metrics, drain, sendTimeoutMs);
  const { record, follow, followExpectation, finishedStatus } = recordedResponses(
    metrics,
    drain,
    sendTimeoutMs,
  );
  const timeouts = httpTimeouts(requestTimeoutMs);
  const app = Fastify({
    logger: false,
    bodyLimit,
    // fastify's own default (0) turns node's request timeout off: a client that stalls
    // mid-upload, or trickles its body, held its connection and the body read so far for good.
    requestTimeout: timeouts.request,
    http: {
      // The Host check is onRequest's (host-header.ts), which answers in this server's JSON.
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
  // One set for every server fastify listens with (one per address; see after listen()).
  const serveOn = (server: Server): void => {
    // Every header line reaches onRequest, whose check refuses too many (header-lines.ts).
    server.maxHeadersCount = 0;
    server.on('checkExpectation', onExpectation);
    server.on('connect', onConnect);
    server.on('checkContinue', deferContinue);
    server.prependListener('request', markAfterClose);
    server.on('request', rememberResponse);
    server.on('connection', lingerOnClose);
    server.on('connection', connections.add);
  };
  serveOn(app.server);
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
    checkHeaderLines(request.raw);
    checkHost(request.raw);
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
    connectionAfterAnswer(request, reply, drain.state);
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
    serveOn(other);
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
