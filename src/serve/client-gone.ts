/**
 * A request's signal for "the client went away before its answer was written": the runtime
 * then asks the work to stop (its capacity stays held until the work ends).
 */
import type { ServerResponse } from 'node:http';

const GONE = 'the client closed the connection';

/**
 * The handler runs after the body has been read, so the connection may already be gone: its
 * 'close' has then fired before this listener could hear it, and the signal starts aborted.
 */
export function clientGone(res: ServerResponse): AbortSignal {
  if (res.destroyed && !written(res)) return AbortSignal.abort(new Error(GONE));
  const controller = new AbortController();
  res.once('close', () => {
    if (!written(res)) controller.abort(new Error(GONE));
  });
  return controller.signal;
}

/**
 * Whether `res`'s answer was written: ended, nothing of it left in node's buffers (on a closed
 * connection, what node had not sent is dropped). Not writableFinished: node 24.20+ leaves that
 * false for an answer whose connection closed before all of it was out (nodejs/node#64847),
 * where node before it read it from these buffers: an answer written, then cut off by the send
 * timeout or reset by its client, read as one whose client left before it was written.
 */
function written(res: ServerResponse): boolean {
  return res.writableEnded && res.writableLength === 0;
}
