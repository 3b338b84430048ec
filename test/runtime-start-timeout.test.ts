/**
 * start() is bounded by startTimeoutMs even when a thread's init never settles: that thread never
 * takes its start-up ping, so only the main thread's own timer can end the wait.
 */
import { describe, expect, it } from 'vitest';
import { Runtime } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { newControl } from './fixtures/runtime-control.js';

describe('startTimeoutMs', () => {
  it('a thread whose init never finishes: start() rejects OMNI_ERR_WORKER_EXITED', async () => {
    const control = newControl();
    const started = Runtime.start({
      worker: builtModuleUrl('test/fixtures/runtime-hang-init-worker.js'),
      threads: 2,
      startTimeoutMs: 300,
      workerData: { control: control.buffer, hangAt: 2 },
    });
    // On the unfixed code this never settles and the test times out.
    await expect(started).rejects.toMatchObject({ code: 'OMNI_ERR_WORKER_EXITED' });
  }, 20_000);
});
