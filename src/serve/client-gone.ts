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
  if (res.destroyed && !res.writableFinished) return AbortSignal.abort(new Error(GONE));
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort(new Error(GONE));
  });
  return controller.signal;
}
