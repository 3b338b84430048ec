/**
 * BoundedAdmission and the life of the process (docs/admission.md): a
 * caller waiting in admit(), or a close() waiting for a drain, keeps the process alive (a
 * pending Atomics.waitAsync alone does not, on Node 20), and nothing is held once nobody waits.
 * Each scenario runs in its own process (lifetime-admission.ts), which must end by itself (exit
 * code 0); one that does not is killed at the limit (code null).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { killChildren, runScenario } from './fixtures/lifetime-child.js';

afterEach(killChildren);

describe('a process with a BoundedAdmission', () => {
  it('a waiter with a timeout only: the process waits for it to time out, then ends, a permit still held', async () => {
    const ended = await runScenario('admit-timeout');
    expect(ended).toEqual({ code: 0, lines: ['waited OMNI_ERR_TIMEOUT', 'held []', 'exit []'] });
  });

  it('a waiter whose signal aborts: the process ends', async () => {
    const ended = await runScenario('admit-abort');
    expect(ended).toEqual({ code: 0, lines: ['waited OMNI_ERR_ABORTED', 'held []', 'exit []'] });
  });

  // Without the admission's own handle the process ends first: exit code 13, nothing printed.
  it.each(['admit', 'drain'])(
    'a waiting %s (admit(), close()), woken by a release on another thread: the process stays until woken, then ends',
    async (kind) => {
      const ended = await runScenario('woken-by-thread', [kind]);
      expect(ended).toEqual({ code: 0, lines: [`woken ${kind} 0`, 'held []', 'exit []'] });
    },
  );

  it('a waiter queued behind one whose signal aborts: the process stays until it is woken, then ends', async () => {
    const ended = await runScenario('woken-by-thread', ['behind-abort']);
    expect(ended).toEqual({
      code: 0,
      lines: ['ahead OMNI_ERR_ABORTED', 'woken behind-abort 0', 'held []', 'exit []'],
    });
  });

  it('close() with nothing outstanding: the process ends', async () => {
    const ended = await runScenario('close-idle');
    expect(ended).toEqual({ code: 0, lines: ['closed true', 'held []', 'exit []'] });
  });
});
