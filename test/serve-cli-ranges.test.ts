/**
 * serve's flags take what serve() takes, no more: a value serve() would refuse is a usage
 * mistake on the command line (exit 2, before the runtime starts), not a failure once it is up
 * (exit 1). Each range's ends are taken by both and the values past them refused by both.
 */
import { describe, expect, it } from 'vitest';
import { parseServeArgs } from '../src/cli/serve-command.js';
import { type Served, serve } from '../src/serve/index.js';
import { codeOf } from './fixtures/runtime-harness.js';

/** Enough of a LinearRuntime for serve()'s option checks, which come before it listens. */
const runtime = {
  run: () => Promise.reject(new Error('not run')),
  report: () => ({}),
  close: () => Promise.resolve({ clean: true, abandoned: 0 }),
  inFeatures: 4,
  outFeatures: 2,
  deadlineMs: undefined,
} as unknown as Served;

describe("serve's flags take serve()'s ranges", () => {
  it.each([
    ['--port', 'port', 0, 65_535, 'port'],
    ['--body-limit', 'bodyLimit', 1, 2 ** 31 - 1, 'bodyLimit'],
    ['--retry-after', 'retryAfterSeconds', 0, 86_400, 'retryAfterSeconds'],
  ] as const)('%s: %s from %i to %i', async (flag, option, least, most, key) => {
    for (const value of [least, most]) {
      const parsed = parseServeArgs([flag, String(value)], {});
      expect(parsed === 'help' ? undefined : parsed[key]).toBe(value);
    }
    for (const value of [least - 1, most + 1]) {
      expect(() => parseServeArgs([flag, String(value)], {})).toThrow(
        expect.objectContaining({ code: 'OMNI_ERR_USAGE' }),
      );
      expect(await codeOf(serve(runtime, { [option]: value }))).toBe('OMNI_ERR_INVALID_ARGUMENT');
    }
  });
});
