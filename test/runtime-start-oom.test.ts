/**
 * A thread its resourceLimits kill as it starts (Node's ERR_WORKER_OUT_OF_MEMORY) is a thread
 * lost at start: docs/runtime.md says start() rejects OMNI_ERR_WORKER_EXITED with Node's error as `cause`.
 * A smaller old generation is refused before any thread is made: Node 22.18+, 24 and 26 abort the
 * whole process (V8 "GC during deserialization") as they make a thread's heap under ~2.5 MB,
 * where Node 20 ended the thread. At 0.5 MB that ended this file's vitest fork, on 22 and 24.
 */
import { describe, expect, it } from 'vitest';
import { Runtime } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { MIN_OLD_GENERATION_SIZE_MB } from '../src/runtime/options.js';
import { codeOf } from './fixtures/runtime-harness.js';

const ECHO = builtModuleUrl('test/fixtures/echo-worker.js');

describe('Runtime.start, a thread its resourceLimits killed at start', () => {
  it("rejects OMNI_ERR_WORKER_EXITED with Node's ERR_WORKER_OUT_OF_MEMORY as cause", async () => {
    const started = Runtime.start({
      worker: ECHO,
      resourceLimits: { maxOldGenerationSizeMb: MIN_OLD_GENERATION_SIZE_MB },
    });
    const error = await started.then(
      async (rt) => {
        await rt.close();
        return undefined;
      },
      (err: unknown) => err,
    );
    expect(error).toMatchObject({
      code: 'OMNI_ERR_WORKER_EXITED',
      cause: expect.objectContaining({ code: 'ERR_WORKER_OUT_OF_MEMORY' }),
    });
  });

  it.each([0.5, 2.4, MIN_OLD_GENERATION_SIZE_MB - 0.001])(
    'an old generation of %s MB, which Node 22.18+ answers by ending the process: OMNI_ERR_INVALID_ARGUMENT',
    async (mb) => {
      const limits = { maxOldGenerationSizeMb: mb };
      expect(await codeOf(Runtime.start({ worker: ECHO, resourceLimits: limits }))).toBe(
        'OMNI_ERR_INVALID_ARGUMENT',
      );
    },
  );
});
