/**
 * A signal that takes no listener (its own `constructor` throws as Node's addEventListener reads
 * it) is a malformed option: whatever the load, the call rejects with the signal's error before
 * anything is admitted, counted `invalid`. Runtime.run followed it only where the call happened
 * to follow it first: a wait that queued did so before admission (`invalid`), a call admitted at
 * once did so at its dispatch (`failed`), and a full runtime without `wait` refused the call
 * before its signal was ever followed (`refused`, OMNI_ERR_REJECTED).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RuntimeOptions } from '../src/index.js';
import { refusingSignal } from './fixtures/refusing-signal.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, control, gate, rejection, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const runtimes: [string, Partial<RuntimeOptions>][] = [
  ['a bounded runtime', { admission: { requests: 1 } }],
  ['a bounded runtime with wait', { admission: { requests: 1, wait: true } }],
  ['the serial scheduler', {}],
];

describe('a call whose signal takes no listener', () => {
  it.each(runtimes)('%s with room: its error, counted invalid, nothing held', async (_what, options) => {
    const rt = await start({ threads: 1, ...options });
    const { signal, refusal } = refusingSignal();
    expect(await rejection(rt.run({ mode: 'echo', value: 1 }, { signal }))).toBe(refusal);
    expect(rt.report()).toMatchObject({ depth: 0, waiting: 0, invalid: 1, failed: 0, refused: 0 });
    await expect(rt.run({ mode: 'echo', value: 'next' })).resolves.toBe('next');
    expect(rt.report()).toMatchObject({ depth: 0, completed: 1, invalid: 1, failed: 0 });
  });

  // The serial scheduler has no "full" short of 65,536 calls outstanding.
  it.each(runtimes.slice(0, 2))('%s that is full: the same, never refused', async (_what, options) => {
    const rt = await start({ threads: 1, ...options });
    const c = control();
    const held = rt.run(gate(c, { value: 'held' }));
    await waitFor(c, STARTED, 1, held);
    const { signal, refusal } = refusingSignal();
    expect(await rejection(rt.run({ mode: 'echo', value: 1 }, { signal }))).toBe(refusal);
    expect(rt.report()).toMatchObject({
      depth: 1,
      waiting: 0,
      rejected: 0,
      invalid: 1,
      failed: 0,
      refused: 0,
    });
    open(c);
    await expect(held).resolves.toBe('held');
    await expect(rt.run({ mode: 'echo', value: 'next' })).resolves.toBe('next');
    expect(rt.report()).toMatchObject({ depth: 0, completed: 2, invalid: 1, failed: 0 });
  });
});
