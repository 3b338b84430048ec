/**
 * A result whose buffer the handler's leftover code detaches after the handler returned, in a
 * worker that handles uncaught errors itself. piscina's post of the reply then throws (from a
 * nextTick), and the worker's own handler swallowed that: the thread lived on with its call
 * 'running' for good, the caller's promise never settling. Now the refused reply ends the thread
 * as it does in a worker without such a handler: the call fails, a replacement serves.
 */
import { afterEach, expect, it } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { cleanup, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

/** Microtask delays tried: from before the entry's clone check to past piscina's post. */
const DELAYS = 12;

it('a buffer detached between the return and the post: the call settles, the thread is replaced', async () => {
  const rt = await start({ worker: builtModuleUrl('test/fixtures/late-detach-worker.js'), threads: 1 });
  const outcomes = new Set<string>();
  for (let delay = 0; delay < DELAYS; delay++) {
    // The deadline only bounds a call that would never settle (it then fails as DEADLINE).
    const settled = await rt.run(delay, { deadlineMs: 10_000 }).then(
      () => 'ok',
      (err: { code?: string }) => err.code,
    );
    outcomes.add(String(settled));
    if (settled !== 'ok' && settled !== 'OMNI_ERR_TASK_FAILED') break; // every later call waits too
  }
  // Detached before the check: failed in the worker; after the post: too late to matter.
  expect([...outcomes].sort()).toEqual(['OMNI_ERR_TASK_FAILED', 'ok']);
  expect(rt.report()).toMatchObject({ state: 'ready', depth: 0, running: 0 });
});
