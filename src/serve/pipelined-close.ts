/**
 * node:http closes a response with its connection only once the response is attached to it. A
 * pipelined request whose response still waits behind an earlier one is never attached when
 * the client leaves, so that response would never emit 'close': the drain would count it in
 * flight for good, its work would never hear that the client left and no 499 would be recorded.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { closesConnection } from './client-error.js';

/**
 * The responses of a connection still queued behind an earlier one. One 'close' listener per
 * connection ends them all: a listener each made every request pipelined past the tenth warn
 * (MaxListenersExceededWarning, once per connection) and every detach scan the whole list.
 */
const kQueued = Symbol('omni.serve.queuedResponses');

interface QueuingSocket extends Socket {
  [kQueued]?: Set<ServerResponse>;
}

/** What node does to an attached response when its connection closes. */
function endWithConnection(res: ServerResponse): void {
  res.destroy();
  res.emit('close');
}

/**
 * Makes `res` close with `connection` even while it is queued: the same as node does for an
 * attached response (destroyed, then 'close'), at once if the connection is gone already.
 * Call it after the response's 'close' listeners are in place. Once attached, node's own
 * handling takes over.
 */
export function closeWithConnection(res: ServerResponse, connection: Socket): void {
  if (res.socket !== null) return;
  if (connection.destroyed) {
    endWithConnection(res);
    return;
  }
  const socket = connection as QueuingSocket;
  let queued = socket[kQueued];
  if (queued === undefined) {
    const responses = new Set<ServerResponse>();
    queued = responses;
    socket[kQueued] = responses;
    // In the order they came; each leaves the set as it closes (iteration skips those gone).
    connection.once('close', () => {
      for (const queuedRes of responses) endWithConnection(queuedRes);
    });
  }
  queued.add(res);
  const detach = (): void => {
    queued.delete(res);
  };
  res.once('socket', detach);
  res.once('close', detach);
}

/** Connections an answer closed once it was all out (it said `Connection: close`). */
const closedByAnswer = new WeakSet<Socket>();

/**
 * Notes, once `res` is all out, whether its answer closes `connection`. A request routed before
 * that was known (a JSON answer streamed to HTTP/1.0 has no length, so it closes: json-answer.ts)
 * is queued behind it, answered or not, and never sent: the server cut it off, not its client.
 * Unless the client left first: node before 24.20 and 26.7 says 'finish' too for an answer whose
 * connection was destroyed before it was out (a client's reset; the drain's or the send timeout's
 * cut is recorded as theirs; 24.20+ and 26.7+ no longer do, nodejs/node#64847), and node says it
 * for one out only after the client's FIN (taken as gone, docs/limits.md).
 */
export function noteClosingAnswer(res: ServerResponse, connection: Socket): void {
  res.once('finish', () => {
    if (closesConnection(res) && !connection.destroyed && !connection.readableEnded) {
      closedByAnswer.add(connection);
    }
  });
}

/** Whether an answer on `connection` closed it (noteClosingAnswer): those behind it were cut off. */
export function closedByEarlierAnswer(connection: Socket | null): boolean {
  return connection !== null && closedByAnswer.has(connection);
}
