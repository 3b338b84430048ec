/**
 * A request's signal for "the client went away before its answer was written": the runtime
 * then asks the work to stop (its capacity stays held until the work ends).
 */
import type { ServerResponse } from 'node:http';
import { writtenWhole } from './written-whole.js';

const GONE = 'the client closed the connection';

/**
 * The handler runs after the body has been read, so the connection may already be gone: its
 * 'close' has then fired before this listener could hear it, and the signal starts aborted.
 * An answer written whole and then cut off (the send timeout, a reset) had its client: not
 * writableFinished, which node 24.20+ and 26.7+ leave false for it (see writtenWhole).
 */
export function clientGone(res: ServerResponse): AbortSignal {
  if (res.destroyed && !writtenWhole(res)) return AbortSignal.abort(new Error(GONE));
  const controller = new AbortController();
  res.once('close', () => {
    if (!writtenWhole(res)) controller.abort(new Error(GONE));
  });
  return controller.signal;
}
