/**
 * The serial scheduler never refuses, even past its 65,536-call claim window: a call beyond it
 * waits in order for a slot, its deadline applies only once dispatched, and an abort or close()
 * ends its wait at once (aborted, or `unavailable`), never as a refusal.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, codeOf, control, gate, start, until } from './fixtures/runtime-harness.js';

afterEach(cleanup);

/** A serial runtime whose 65,536 claim slots are all held: one call at its gate, the rest queued. */
async function fullWindow() {
  const rt = await start({ threads: 1 });
  const a = control();
  const first = rt.run(gate(a, { value: 'a' }));
  await waitFor(a, STARTED, 1, first);
  const fill = Array.from({ length: 65_535 }, () => rt.run({ mode: 'echo', value: 0 }));
  return { rt, a, first, fill };
}

describe('serial scheduler beyond its claim window', () => {
  it('a call waiting for a claim slot is not timed out by its deadline there (rejected stays 0)', async () => {
    const { rt, a, first, fill } = await fullWindow();
    expect(rt.report().depth).toBe(65_536);
    const DEADLINE_MS = 50;
    const late = codeOf(rt.run({ mode: 'echo', value: 1 }, { deadlineMs: DEADLINE_MS }));
    await until(() => rt.report().waiting === 1, 'the late call to wait for a slot');
    // Created after run(), so due after a deadline armed at run() (timers fire in due order): the
    // deadline itself is what is under test here, not a margin of "long enough".
    await new Promise((resolve) => setTimeout(resolve, DEADLINE_MS));
    // Its deadline applies once dispatched: nothing was refused while it waited for a slot.
    expect(rt.report()).toMatchObject({ rejected: 0, deadline: 0, waiting: 1 });
    open(a);
    await Promise.all([first, ...fill]);
    expect(await late).toBe('OMNI_ERR_DEADLINE');
    await until(() => rt.report().depth === 0, 'the late call to be skipped');
    expect(rt.report()).toMatchObject({ rejected: 0, refused: 0, deadline: 1, completed: 65_536, depth: 0 });
  }, 120_000);

  it('docs/limits.md: "An abort ends that wait at once": aborted, nothing run, rejected stays 0', async () => {
    const { rt, a, first, fill } = await fullWindow();
    const controller = new AbortController();
    const late = codeOf(rt.run({ mode: 'echo', value: 1 }, { signal: controller.signal }));
    await until(() => rt.report().waiting === 1, 'the late call to wait for a slot');
    controller.abort();
    // Every slot is still held (the gate is shut): only the abort can have ended the wait.
    expect(await late).toBe('OMNI_ERR_ABORTED');
    expect(rt.report()).toMatchObject({ waiting: 0, aborted: 1, rejected: 0, depth: 65_536 });
    open(a);
    await Promise.all([first, ...fill]);
    expect(rt.report()).toMatchObject({ aborted: 1, rejected: 0, completed: 65_536, depth: 0 });
  }, 120_000);

  it('close() wakes a call waiting for a claim slot: unavailable, and rejected stays 0', async () => {
    const { rt, a, first, fill } = await fullWindow();
    const late = codeOf(rt.run({ mode: 'echo', value: 1 }));
    await until(() => rt.report().waiting === 1, 'the late call to wait for a slot');
    const closing = rt.close();
    expect(await late).toBe('OMNI_ERR_UNAVAILABLE');
    open(a);
    await Promise.all([first, ...fill, closing]);
    expect(rt.report()).toMatchObject({
      unavailable: 1,
      refused: 0,
      rejected: 0,
      completed: 65_536,
      depth: 0,
    });
  }, 120_000);
});
