/**
 * A runtime and the life of the process that holds it (docs/runtime.md, "A runtime with your own
 * worker"): each scenario runs in its own process (lifetime-runtime.ts), which must end by
 * itself (exit code 0) once nothing is left to do, having printed what it saw; `held []` says
 * nothing was left holding the process when close() or start() settled (read once the handles
 * closed by then have finished closing: heldOnceClosed). A process that does not end is killed at
 * the scenario's limit and reads code null.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { killChildren, runScenario } from './fixtures/lifetime-child.js';

afterEach(killChildren);

describe('a runtime closed', () => {
  it.each(['runtime', 'linear'])('%s: start, run, close, then the process ends', async (kind) => {
    const ended = await runScenario('run-close', [kind]);
    expect(ended).toEqual({
      code: 0,
      lines: ['answer 4', 'closed {"clean":true,"abandoned":0}', 'held []', 'exit []'],
    });
  });

  // The gate opens from an unref'd timer: only a process held by the call and the close() runs it.
  it('close() while a call runs: the process waits for the call and the close, then ends', async () => {
    const ended = await runScenario('close-while-running');
    expect(ended).toEqual({
      code: 0,
      lines: ['call ran', 'closed {"clean":true,"abandoned":0}', 'held []', 'exit []'],
    });
  });
});

describe('a runtime whose close() cuts a call off', () => {
  it.each(['timeout', 'reply'])(
    '(%s): the call rejects, close() says so, and the process ends',
    async (how) => {
      const ended = await runScenario('close-cuts-off', [how]);
      expect(ended).toEqual({
        code: 0,
        lines: ['closed {"clean":false,"abandoned":1}', 'call OMNI_ERR_WORKER_EXITED', 'held []', 'exit []'],
      });
    },
  );
});

describe('a start() that fails', () => {
  it.each([
    ['entry', 'ERR_MODULE_NOT_FOUND'],
    ['init', 'X_INIT'],
    ['timeout', 'OMNI_ERR_WORKER_EXITED'],
  ])('(%s): its threads are gone when it rejects (%s), and the process ends', async (why, code) => {
    const ended = await runScenario('start-fails', [why]);
    expect(ended).toEqual({ code: 0, lines: [`start ${code}`, 'held []', 'exit []'] });
  });
});

describe('a runtime never closed', () => {
  // docs/runtime.md: a script that never calls close() gets its answers and exits by itself.
  it.each(['runtime', 'linear'])(
    '%s: answers, then the process ends, the runtime still ready',
    async (kind) => {
      const ended = await runScenario('run-close', [kind, 'open']);
      expect(ended).toEqual({ code: 0, lines: ['answer 4', 'exit []', 'state ready'] });
    },
  );

  // The loss's due timer is unref'd: 2^31 ms and more is armed in steps (long-timeout.ts),
  // whose unref once reached only a plain timer, so that one held the process for its length
  // (Infinity arms none).
  it.each([600_000, 2 ** 31, Number.POSITIVE_INFINITY])(
    "lost a thread whose replacement exited in its init: the loss's startTimeoutMs (%d ms) does not hold the process",
    async (startTimeoutMs) => {
      const { code, lines } = await runScenario('lost-thread', [String(startTimeoutMs)]);
      expect({ code, lines }).toEqual({
        code: 0,
        lines: ['lost OMNI_ERR_WORKER_EXITED', 'exit []', 'state ready'],
      });
    },
  );
});
