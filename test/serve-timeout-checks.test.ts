/**
 * node:http checks its request and headers timeouts only once per connectionsCheckingInterval:
 * a timeout can run up to that interval over. httpTimeouts() checks every quarter of the
 * shorter of the two (at least every 1 ms), so a request is cut off within a quarter past its
 * timeout, whatever that timeout is.
 */
import { expect, it } from 'vitest';
import { httpTimeouts } from '../src/serve/request-timeout.js';

it.each([
  [1_000, { request: 1_000, headers: 1_000, check: 250 }],
  [10_000, { request: 10_000, headers: 10_000, check: 2_500 }],
  [300_000, { request: 300_000, headers: 60_000, check: 15_000 }],
  [Number.POSITIVE_INFINITY, { request: 0, headers: 60_000, check: 15_000 }],
  [2, { request: 2, headers: 2, check: 1 }],
])('a request timeout of %s ms: checked every quarter of the shorter timeout', (ms, settings) => {
  expect(httpTimeouts(ms)).toEqual(settings);
});
