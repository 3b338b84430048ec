/**
 * A runtime and the life of the process that holds it (README, "A runtime with your own
 * worker"): each scenario runs in its own process, which must end by itself (exit code 0) once
 * nothing is left to do, having printed what it saw. A process that does not end is killed at
 * the scenario's limit and reads code null.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { killChildren, runScenario } from './fixtures/lifetime-child.js';

afterEach(killChildren);

describe('a runtime never closed', () => {
  // The loss's due timer is unref'd: 2^31 ms and more is armed in steps (long-timeout.ts),
  // whose unref once reached only a plain timer, so that one held the process for its length.
  it.each([600_000, 2 ** 31])(
    "lost a thread whose replacement exited in its init: the loss's startTimeoutMs (%d ms) does not hold the process",
    async (startTimeoutMs) => {
      const { code, lines } = await runScenario('lost-thread', [String(startTimeoutMs)]);
      expect({ code, lines }).toEqual({
        code: 0,
        lines: ['lost OMNI_ERR_WORKER_EXITED', 'exit []', 'state ready'],
      });
    },
    40_000,
  );
});
