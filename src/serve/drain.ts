/**
 * Graceful shutdown of one server.
 *
 * Order: (1) the server reports 'draining' (on connections that are already open, GET /health
 * and the run route answer 503, GET /metrics still 200, 404 and 405 as while serving, though
 * before any body is read, and a 404 whose body was still arriving answered then, see
 * unread-not-found.ts; each connection's last answer says `Connection: close`); (2) the listening
 * sockets close (every address of host 'localhost'), so no new connection is accepted
 * (open keep-alive connections are left to hear their 503 rather than being reset under a
 * request in flight);
 * (3) requests already being answered run to their end (the last answer of each connection
 * closes it, when the drain makes it: one made before, queued behind a call the drain waits
 * for, said keep-alive, and leaves its connection idle like those idle when the drain began);
 * (4) the runtime closes, which waits for work still running after its caller left (a 504
 * keeps its capacity until the work ends);
 * (5) the remaining connections (those node handed to a CONNECT listener too, see adopt()) and
 * the HTTP server close; a request still unanswered then is cut off (cutOff() says so, for the
 * metrics: the server, not the client, ended it). Steps 3 and 4 share one timeout:
 * work still running then is abandoned (the runtime terminates the threads running it, without
 * their close hooks, and reclaims its capacity; its idle threads run their close hooks first).
 * A second signal (expire()) also cuts short the runtime's wait for replies still on their way
 * (work that ended, its thread stuck before the reply) and its close hooks.
 *
 * Invariants: drain runs once (later calls get the same promise); `inflight` counts every
 * request from its arrival until its response closes (finished, or the socket went away), or
 * until its answer written raw on the connection is out (settle()), and every answer owed to a
 * request that reached no route (owe()) until it is out or its connection closed; the drain
 * resolves only once all of them ended, so every routed request the server received is in the
 * metrics (those cut off as 444) and `inflight` is 0 when it does, as is the count of open
 * connections (the constructor's `disconnected`).
 * Throws: nothing; the returned result says whether everything ended within the timeout.
 */
import type { ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { clearLongTimeout, type LongTimer, setLongTimeout } from '../long-timeout.js';
import type { OptionKeys } from '../option-keys.js';
import { listeningServers } from './listeners.js';
import { writtenWhole } from './written-whole.js';

/** A server's life: 'serving', 'draining' (drain() called) or 'closed' (its drain ended). */
export type ServerState = 'serving' | 'draining' | 'closed';

/** How ServeHandle.drain() ended. */
export interface DrainResult {
  /** True when every request and all runtime work ended within the timeout. */
  readonly clean: boolean;
  /**
   * Requests still unanswered when the timeout cut the wait short, and those that came (on a
   * connection open before the drain) while the runtime closed and were cut off unanswered;
   * those answered without reaching a route (a request node could not parse, a CONNECT) too.
   */
  readonly abandonedRequests: number;
}

/** ServeHandle.drain()'s options. */
export interface DrainOptions {
  /**
   * How long to wait for in-flight work before abandoning it (default: serve()'s drainTimeoutMs;
   * 0: abandon it at once, as Runtime.close's 0 does; Infinity: no limit).
   */
  readonly timeoutMs?: number | undefined;
}

export const DRAIN_KEYS: OptionKeys<DrainOptions> = { timeoutMs: true };

export interface Closable {
  /** Says itself whether its timeout abandoned work: its teardown takes time of its own. */
  close(options?: { timeoutMs?: number }): Promise<{ readonly clean: boolean }>;
}

/**
 * `runtime.close()` as a promise, whatever it does: hand-written JavaScript that throws, or
 * returns no promise, must not stop the drain half way (its connections and server never
 * closed) nor throw out of expire() (in a signal listener, the end of the process).
 */
function closeOf(runtime: Closable, timeoutMs: number): Promise<{ readonly clean: boolean } | undefined> {
  return new Promise((resolve) => resolve(runtime.close({ timeoutMs })));
}

export class Drain {
  readonly #runtime: Closable | undefined;
  #state: ServerState = 'serving';
  /** Responses from their request's arrival until they close. */
  readonly #open = new Set<ServerResponse>();
  /**
   * Connections owing an answer written raw to a request that reached no route (one node could
   * not parse, a CONNECT: client-error.ts), from when it is owed (queued behind the answers
   * before it, or written) until it is out or the connection closed.
   */
  readonly #owed = new Set<Socket>();
  /**
   * Tracked responses settled before they close (their answer out, their connection lingering):
   * no longer in flight, but recorded in the metrics only when they close
   * (recorded-responses.ts), which the drain waits for once it closed every connection.
   */
  readonly #settled = new Set<ServerResponse>();
  /** Whether #wake waits for the settled responses to close too (the drain's last wait). */
  #wakeWhenClosed = false;
  /**
   * Those whose answer was not all written when step 5 closed their connection: the server, not
   * the client, cut them off.
   */
  readonly #cut = new WeakSet<ServerResponse>();
  #wake: (() => void) | undefined;
  #expire: (() => void) | undefined;
  /** The wait ran out (its timeout, or expire()): the calls still running are abandoned. */
  #abandoning = false;
  #closingRuntime = false;
  #result: Promise<DrainResult> | undefined;
  /** Connections node:http handed over (a CONNECT's), which closeAllConnections no longer reaches. */
  readonly #handedOver = new Set<Socket>();

  /** The drain's last wait: every connection the server held said 'close'. */
  readonly #disconnected: () => Promise<void>;

  /**
   * `runtime` is closed by the drain when given (the server owns it); `disconnected` resolves
   * once the server's connections have all closed (by default, at once).
   */
  constructor(runtime: Closable | undefined, disconnected: () => Promise<void> = () => Promise.resolve()) {
    this.#runtime = runtime;
    this.#disconnected = disconnected;
  }

  get state(): ServerState {
    return this.#state;
  }

  /**
   * Whether the drain's wait has run out (its timeout, or expire()), so that a call failing now
   * may be one it abandoned; a thread lost before that is no doing of the drain.
   */
  get abandoning(): boolean {
    return this.#abandoning;
  }

  get inflight(): number {
    return this.#open.size + this.#owed.size;
  }

  /** Counts a request until its response closes. */
  track(res: ServerResponse): void {
    this.#open.add(res);
    res.once('close', () => {
      this.#open.delete(res);
      this.#changed();
    });
  }

  /**
   * A tracked request whose answer is out before its response closes: its answer was written
   * raw on its connection (its body could not be parsed), which may then linger for seconds.
   */
  settle(res: ServerResponse): void {
    if (!this.#open.delete(res)) return;
    this.#settled.add(res);
    res.once('close', () => {
      this.#settled.delete(res);
      this.#changed();
    });
    this.#changed();
  }

  /**
   * Counts an answer owed on `connection` to a request that reached no route, until discharge()
   * (it is out, or will never be written) or the connection closes.
   */
  owe(connection: Socket): void {
    if (this.#owed.has(connection)) return;
    this.#owed.add(connection);
    connection.once('close', () => this.discharge(connection));
  }

  /** The answer owe() counted is out, or will never be written. */
  discharge(connection: Socket): void {
    if (this.#owed.delete(connection)) this.#changed();
  }

  #changed(): void {
    if (this.inflight === 0 && (!this.#wakeWhenClosed || this.#settled.size === 0)) this.#wake?.();
  }

  /**
   * Whether the drain closed this response's connection before it was answered (a client
   * stalled mid-upload, a call still running at the timeout), rather than the client leaving.
   */
  cutOff(res: ServerResponse): boolean {
    return this.#cut.has(res);
  }

  /**
   * A connection node:http no longer tracks (it handed it to a 'connect' listener): step 5
   * closes it with the others, or the HTTP server's close would wait for it, as long as a call
   * before its CONNECT runs or its close lingers.
   */
  adopt(socket: Socket): void {
    this.#handedOver.add(socket);
    socket.once('close', () => this.#handedOver.delete(socket));
  }

  /**
   * Starts the drain of `app` (once; later calls share the first's result) and resolves when
   * the server and runtime are closed. The listener is closed before this returns.
   */
  start(app: FastifyInstance, timeoutMs: number): Promise<DrainResult> {
    this.#result ??= this.#run(app, timeoutMs);
    return this.#result;
  }

  /**
   * Ends the drain's wait now, as if its timeout had passed (e.g. a second SIGINT): work still
   * running is abandoned, whether the drain still waits for requests or for the runtime alone
   * (work whose caller already left), which a later close timeout forces. Once the runtime is
   * closing, every call forces it again: the one after its work ended cuts its wait for the
   * last replies and its close hooks.
   */
  expire(): void {
    this.#expire?.();
    // The drain hears how the close ends through its own call; a runtime that rejects this
    // second one (already closing) must not become an unhandled rejection (a crash).
    if (this.#closingRuntime && this.#runtime) closeOf(this.#runtime, 0).catch(() => {});
  }

  /**
   * Resolves once nothing is in flight: every tracked response closed (their 'close' listeners
   * all ran) or settled, every owed answer discharged; with `settledToo`, once the settled
   * responses closed as well.
   */
  #closed(settledToo = false): Promise<void> {
    this.#wakeWhenClosed = settledToo;
    if (this.inflight === 0 && (!settledToo || this.#settled.size === 0)) return Promise.resolve();
    return new Promise((resolve) => {
      this.#wake = resolve;
    });
  }

  async #run(app: FastifyInstance, timeoutMs: number): Promise<DrainResult> {
    this.#state = 'draining';
    const deadlineAt = Date.now() + timeoutMs;
    // net.Server's close, not http.Server's: stop accepting without also closing the idle
    // keep-alive connections, whose next request should hear 503 rather than a reset.
    const servers = listeningServers(app);
    for (const server of servers) NetServer.prototype.close.call(server);

    let timer: LongTimer;
    const expired = new Promise<false>((resolve) => {
      const expire = (): void => {
        this.#abandoning = true;
        resolve(false);
      };
      this.#expire = expire;
      // A long timeout (beyond ~24.8 days) would otherwise expire after 1 ms.
      timer = setLongTimeout(expire, timeoutMs, undefined);
    });
    const requestsDone =
      this.inflight === 0 ? true : await Promise.race([this.#closed().then(() => true as const), expired]);
    const abandonedRequests = requestsDone ? 0 : this.inflight;
    // Those the wait counted: any other still unanswered at step 5 came after it ended.
    const counted = requestsDone ? undefined : new Set<object>([...this.#open, ...this.#owed]);
    clearLongTimeout(timer);
    let runtimeDone = true;
    if (this.#runtime) {
      // What is left of the timeout; the runtime abandons (terminates) work still running then.
      const left = requestsDone ? Math.max(0, deadlineAt - Date.now()) : 0;
      this.#closingRuntime = true;
      // The runtime's word, not the clock: its teardown after the work ended (tens of ms) must
      // not make a drain whose work all ended in time look abandoned.
      runtimeDone = await closeOf(this.#runtime, left).then(
        // Optional chaining: a hand-written JavaScript runtime that resolves nothing must not
        // stop the drain half way (an unknown answer counts as not clean).
        (closed) => closed?.clean === true,
        () => false,
      );
    }
    // A request that came while the runtime closed (an old connection's, answered as any other
    // while draining, to a client that does not read its answer) and is still unanswered now is
    // cut off as those the timeout abandoned are: the drain that ended it is neither clean nor
    // silent about it.
    let late = 0;
    for (const res of this.#open) {
      // Written whole: every byte is with the kernel, which sends it before the close ('finish'
      // comes a tick later, so it is still open); the client gets all of it.
      if (writtenWhole(res)) continue;
      this.#cut.add(res);
      if (counted?.has(res) !== true) late++;
    }
    for (const connection of this.#owed) {
      // Written whole (ended, nothing left in node's buffer): the kernel sends it before the close.
      if (connection.writableEnded && connection.writableLength === 0) continue;
      if (counted?.has(connection) !== true) late++;
    }
    for (const server of servers) server.closeAllConnections();
    for (const socket of this.#handedOver) socket.destroy();
    // Those node no longer answers on (a parse error) are its to close too; the wait ends with them.
    for (const connection of this.#owed) connection.destroy();
    await app.close();
    // Every connection is destroyed by now, but node says 'close' to a socket's responses (and
    // so the histogram records the 444s of those cut off, and the settled ones) a turn of the
    // event loop later, after app.close() resolved: a caller reading the metrics right after the
    // drain missed them.
    await this.#closed(true);
    // And to the connections themselves: omni_http_connections still counted them.
    await this.#disconnected();
    this.#state = 'closed';
    return { clean: requestsDone && runtimeDone && late === 0, abandonedRequests: abandonedRequests + late };
  }
}
