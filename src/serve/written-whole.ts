import type { ServerResponse } from 'node:http';

/**
 * Whether `res`'s answer is written whole: ended, nothing of it left in node's buffers (the
 * response's and its connection's; a destroyed connection drops what it had not sent). What
 * writableFinished read before node 24.20 and 26.7: from those on (nodejs/node#64847) it is true
 * only as node says 'finish', a tick after the kernel took the last write, and never for an
 * answer whose connection closed before all of it was out.
 */
export function writtenWhole(res: ServerResponse): boolean {
  return res.writableEnded && res.writableLength === 0;
}
