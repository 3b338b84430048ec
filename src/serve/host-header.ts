/**
 * The Host header a request must carry (RFC 9112 3.2: exactly one). Checked by the server's
 * onRequest hook, node:http's own check turned off (server.ts: requireHostHeader), so that its
 * 400 is answered and counted as every other error is.
 */
import type { IncomingMessage } from 'node:http';
import { BadRequestError } from '../errors.js';
import { fieldLines } from './header-lines.js';

/** Throws the 400 of a request without the one Host header it must carry. */
export function checkHost(raw: IncomingMessage): void {
  // RFC 9112 3.2: an HTTP/1.1 request without Host is a 400. node's own check (turned off
  // in server.ts) answered it without this server's JSON body, and uncounted.
  if (raw.httpVersionMajor === 1 && raw.httpVersionMinor === 1 && raw.headers.host === undefined) {
    throw new BadRequestError('an HTTP/1.1 request must carry a Host header');
  }
  // The same rule: more than one Host is a 400. node keeps the first and drops the others, so
  // a proxy in front that routed by another one would disagree with this server about it.
  if (fieldLines(raw, 'host') > 1) {
    throw new BadRequestError('a request must carry one Host header, not several');
  }
}
