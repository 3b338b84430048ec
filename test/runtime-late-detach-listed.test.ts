/**
 * A handler lists a second buffer besides the one under the view it returns, and code it left
 * running detaches that second one before the reply is posted: the view's length is unchanged,
 * so only the transfer list tells. Under Node 21+'s transfer-list check the post would throw in
 * the thread (the call 'running' for good where uncaught errors are swallowed); the list is
 * checked as piscina reads it, and such a call answers (the clone's list posts) or fails
 * OMNI_ERR_TASK_FAILED, on the same thread.
 */
import { afterEach, expect, it } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { cleanup, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const WORKER = builtModuleUrl('test/fixtures/late-detach-other-worker.js');

/** Microtask delays tried: from before the entry's check to past piscina's post. */
const DELAYS = 12;

it('a listed buffer not under the view, detached late: each call answers the view or fails TASK_FAILED', async () => {
  const rt = await start({ worker: WORKER, threads: 1 });
  const seen: string[] = [];
  for (let delay = 0; delay < DELAYS; delay++) {
    // The deadline only bounds a call that would never settle (it then fails as DEADLINE).
    const outcome = await rt.run({ delay }, { deadlineMs: 10_000 }).then(
      (value) => (value instanceof Uint8Array && value.byteLength === 4 ? 'ok' : `answered ${String(value)}`),
      (err: { code?: string }) => String(err.code),
    );
    seen.push(outcome);
    if (outcome === 'OMNI_ERR_DEADLINE') break; // every later call would wait as long
  }
  // Node 20's clone takes a detached buffer listed (the call answers); Node 21+'s refuses it.
  expect(seen.filter((outcome) => outcome !== 'ok' && outcome !== 'OMNI_ERR_TASK_FAILED')).toEqual([]);
  const failed = seen.filter((outcome) => outcome !== 'ok').length;
  expect(rt.report()).toMatchObject({
    state: 'ready',
    depth: 0,
    running: 0,
    failed,
    completed: DELAYS - failed,
  });
});
