/**
 * What a call whose result buffer is changed between the return and the post answers, when it
 * does not fail: the view the handler returned, whole. runtime-late-detach.test.ts counts the
 * outcomes (some fail, the thread serves on) and reads no value: a refusal found as the reply
 * was posted could answer `undefined` as a result, and nothing there saw it.
 */
import { afterEach, expect, it } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import type { LateDetachInput } from './fixtures/late-detach-handler.js';
import { cleanup, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const SWALLOWING = builtModuleUrl('test/fixtures/late-detach-worker.js');

/** Microtask delays tried: from before the entry's check to past piscina's post. */
const DELAYS = 12;

/** Each call's answer: its error's code, or what it resolved with, described. */
function answer(value: unknown): string {
  if (!ArrayBuffer.isView(value)) return `not a view: ${String(value)}`;
  return `${value.constructor.name}(${value.byteLength})`;
}

it.each([
  { mode: 'detach', listed: false, dataView: false },
  { mode: 'detach', listed: true, dataView: false },
  { mode: 'shrink', listed: false, dataView: false },
  { mode: 'detach', listed: false, dataView: true },
  { mode: 'shrink', listed: false, dataView: true },
] as const)(
  '$mode (listed: $listed, DataView: $dataView): every call fails OMNI_ERR_TASK_FAILED or answers the whole view',
  async ({ mode, listed, dataView }) => {
    const rt = await start({ worker: SWALLOWING, threads: 1 });
    const whole = dataView ? 'DataView(4)' : 'Uint8Array(4)';
    const seen = new Set<string>();
    for (let delay = 0; delay < DELAYS; delay++) {
      const input: LateDetachInput = { mode, delay, listed, dataView };
      // The deadline only bounds a call that would never settle.
      seen.add(
        await rt
          .run(input, { deadlineMs: 10_000 })
          .then(answer, (err: { code?: string }) => String(err.code)),
      );
    }
    expect([...seen].filter((s) => s !== whole && s !== 'OMNI_ERR_TASK_FAILED')).toEqual([]);
  },
);
