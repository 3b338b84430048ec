/**
 * The send timeout: how long a whole answer, once handed to its connection, may take to leave.
 * A client that stops reading (its TCP window full) otherwise held the answer's unsent bytes in
 * this process, and the connection, for good: node:http's request timeout ends once the body is
 * read, its keep-alive timeout starts only after the answer finished, and its socket timeout is
 * off. node reports a large write's progress only once all of it is out, so this bounds the
 * whole departure, as the request timeout bounds the whole arrival, not a gap between bytes.
 *
 * Invariants: a response is cut (its connection destroyed) only after its answer was written
 * (node's 'prefinish': for a pipelined answer, once its turn came), or began streaming, and
 * before node saw the last byte out ('finish'); capacity is not involved (the call ended before
 * its answer was written).
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { clearLongTimeout, setLongTimeout } from '../long-timeout.js';

/** The request timeout's: a client reading an answer is given as long as one sending a body. */
export const DEFAULT_SEND_TIMEOUT_MS = 300_000;

const cut = new WeakSet<ServerResponse>();
/** Connections it closed: the answers queued behind the one cut were cut off with it. */
const cutConnections = new WeakSet<Socket>();

/**
 * Whether the send timeout closed this response's connection (`connection`: its request's, as
 * a response queued behind others has none) before its answer was out.
 */
export function sendTimedOut(res: ServerResponse, connection: Socket | null): boolean {
  return cut.has(res) || (connection !== null && cutConnections.has(connection));
}

/**
 * Closes `res`'s connection if its answer is still not out `timeoutMs` after it was written: a
 * whole answer from node's 'prefinish', a streamed one (json-answer.ts) from its first chunk,
 * as it is written only as fast as the client takes it; either once its turn on the connection
 * came.
 */
export function boundSend(res: ServerResponse, timeoutMs: number): void {
  if (timeoutMs === Number.POSITIVE_INFINITY) return;
  let armed = false;
  const arm = (): void => {
    // At 'prefinish', node 24.20+ and 26.7+ read writableFinished false for every answer (true only
    // with 'finish', nodejs/node#64847): each is armed there, and its 'finish' disarms it.
    if (armed || res.writableFinished || res.destroyed) return;
    armed = true;
    cutUnlessOut(res, timeoutMs, () => {
      cut.add(res);
      if (res.socket !== null) cutConnections.add(res.socket);
      res.destroy();
    });
  };
  res.once('prefinish', arm);
  // A streamed answer piped while queued behind earlier answers on its connection (pipelined)
  // only fills node's buffer: timed from then, its clock ran through the earlier answers'
  // calls and departures, and cut the connection under them while the client read them all.
  res.once('pipe', () => {
    if (res.socket !== null) arm();
    else res.once('socket', arm);
  });
}

/**
 * The same bound for an answer written raw on `connection`, then ended (client-error.ts: a
 * request node could not parse, a CONNECT): out once the connection says 'finish'. Unbounded,
 * a client that read none of it held the connection, and a drain without a timeout, for good.
 * Cut, the connection counts as one the send timeout closed (sendTimedOut), for a routed
 * request whose answer it was.
 */
export function boundRawSend(connection: Socket, timeoutMs: number): void {
  if (timeoutMs === Number.POSITIVE_INFINITY || connection.writableFinished) return;
  cutUnlessOut(connection, timeoutMs, () => {
    cutConnections.add(connection);
    connection.destroy();
  });
}

/** Runs `cutOff` unless `stream` says 'finish' (all of it out) or 'close' within `timeoutMs`. */
function cutUnlessOut(stream: ServerResponse | Socket, timeoutMs: number, cutOff: () => void): void {
  const timer = setLongTimeout(cutOff, timeoutMs, undefined);
  const stop = (): void => clearLongTimeout(timer);
  stream.once('finish', stop);
  stream.once('close', stop);
}
