/**
 * The request timeout: how long a request may take to arrive, headers and body, enforced by
 * node:http itself. fastify's own default (0) turns it off, so a client that stalled mid-upload,
 * or trickled its body, held its connection and the body read so far for good; serve() sets
 * node's settings from its requestTimeoutMs through httpTimeouts().
 *
 * node's clock, kept as it is: from a request's first byte to its body's last, whatever its
 * progress, also while node reads none of that body because answers pipelined before it back
 * up (a client not taking them, or node's socket high-water mark of them queued behind a call
 * still running: 16 KiB on node 20, 64 KiB from 22). A clock that stopped while node does not
 * read would be a timer of this server's for every request, in place of node's one sweep per
 * interval, and would leave that request's wait bounded only by what bounds the answers before
 * it (the send timeout; the calls' deadlines, where set).
 * Pipelining clients are rare (docs/limits.md, Timeouts; serve-request-timeout.test.ts pins it).
 */

/** node:http's own default, which fastify turns off (a stalled upload was then held for good). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 300_000;
/** node:http's own bound on the headers, kept under a shorter request timeout. */
const HEADERS_TIMEOUT_MS = 60_000;
/** node:http's interval between its checks of both timeouts, kept as the longest. */
const TIMEOUT_CHECK_MS = 30_000;

/**
 * node:http's settings for a request timeout: whole milliseconds, 0 for none (Infinity, and
 * anything past 2^31 - 1 ms, ~24.8 days: node keeps them in 32 bits, where a larger one would
 * wrap to a short one); the headers' no longer than the request's (node refuses that); and
 * checked every quarter of the shorter (node's 30 s interval would let a short one run up to
 * 30 s over).
 */
export function httpTimeouts(requestTimeoutMs: number): {
  request: number;
  headers: number;
  check: number;
} {
  const request = requestTimeoutMs > 2 ** 31 - 1 ? 0 : Math.ceil(requestTimeoutMs);
  const headers = request === 0 ? HEADERS_TIMEOUT_MS : Math.min(HEADERS_TIMEOUT_MS, request);
  return { request, headers, check: Math.min(TIMEOUT_CHECK_MS, Math.max(1, Math.floor(headers / 4))) };
}
