/**
 * After a seeded random life of a runtime (fixtures/lifetime-random-life.ts), closed or left
 * open, nothing of the library holds the process: it ends by itself (code 0, `exit []`), every
 * call settled (docs/runtime.md: a call in flight or a caller waiting
 * holds the process, and nothing else does).
 */
import { afterEach, expect, it } from 'vitest';
import { killChildren, runScenario } from './fixtures/lifetime-child.js';

afterEach(killChildren);

it.each([
  [1, 'close'],
  [2, 'close'],
  [3, 'open'],
  [4, 'open'],
])('seed %i, %s: the process ends by itself, every call settled', async (seed, end) => {
  const ended = await runScenario('random-life', [String(seed), end]);
  const lines =
    end === 'close' ? ['closed', 'exit []', 'settled all'] : ['exit []', 'settled all', 'state ready'];
  expect(ended).toEqual({ code: 0, lines });
});
