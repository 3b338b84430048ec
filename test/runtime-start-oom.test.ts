/**
 * A thread its resourceLimits kill as it starts (Node's ERR_WORKER_OUT_OF_MEMORY) is a thread
 * lost at start: README says start() rejects OMNI_ERR_WORKER_EXITED with Node's error as `cause`.
 */
import { describe, expect, it } from 'vitest';
import { Runtime } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';

const ECHO = builtModuleUrl('test/fixtures/echo-worker.js');

describe('Runtime.start, a thread its resourceLimits killed at start', () => {
  it("rejects OMNI_ERR_WORKER_EXITED with Node's ERR_WORKER_OUT_OF_MEMORY as cause", async () => {
    const started = Runtime.start({ worker: ECHO, resourceLimits: { maxOldGenerationSizeMb: 0.5 } });
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
});
