/**
 * run() holds a given signal until the call ends and then lets it go; it must do that without
 * handling the promise it hands the caller, or a caller who drops a failed call's promise would
 * never hear of the failure (no unhandled rejection), where a call without a signal is heard.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { killChildren, runScenario } from './fixtures/lifetime-child.js';

afterEach(killChildren);

describe('a dropped failed call with a signal is reported as an unhandled rejection', () => {
  it.each(['runtime', 'linear'])('%s', async (kind) => {
    const ended = await runScenario('dropped-rejection', [kind]);
    expect(ended.lines).toContain('unhandled OMNI_ERR_INVALID_ARGUMENT');
    expect(ended.code).toBe(0);
  });
});
