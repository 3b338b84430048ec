/**
 * Whether any of a response's answer left for its client: handed to its connection (to the
 * kernel, or to the connection's own buffer), not merely written into the response. node sets
 * headersSent for an answer it then keeps in the response's buffer (its connection no longer
 * writable: a half-closing client's FIN ended it, the end waiting for earlier bytes to go out)
 * or drops (its connection destroyed, before node says 'close'): read as "began to leave", such
 * an answer was recorded with a status it never sent, where its client had left first (499).
 *
 * Counted in the connection's bytesWritten from when the response's turn on it came (its
 * 'socket'), less the 100 Continue it may have written: a connection, once no longer writable,
 * never is again, so a head handed over follows a 100 handed over, and one kept or dropped
 * leaves at most the 100's bytes counted.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { continueWritten } from './expect-continue.js';

/** What node writes for a 100 Continue. */
const CONTINUE_BYTES = Buffer.byteLength('HTTP/1.1 100 Continue\r\n\r\n');

/**
 * Starts watching `res` on `connection` (its request's: a response queued behind earlier
 * answers has none yet); the function returned says, when asked, whether any of its answer left.
 * `wroteContinue` says whether `res` wrote a 100 Continue (expect-continue.ts keeps that).
 */
export function answerLeft(
  res: ServerResponse,
  connection: Socket,
  wroteContinue: (res: ServerResponse) => boolean = continueWritten,
): () => boolean {
  let from: number | undefined;
  const mark = (): void => {
    from = connection.bytesWritten;
  };
  if (res.socket !== null) mark();
  else res.once('socket', mark);
  return () => {
    if (from === undefined || !res.headersSent) return false;
    const handed = (connection.bytesWritten ?? from) - from;
    return handed > (wroteContinue(res) ? CONTINUE_BYTES : 0);
  };
}
