/**
 * A WebAssembly.Memory's buffer listed with ctx.transfer: Node cannot detach it. Node 20 leaves
 * it in place (copying it where the reply refers to it); Node 21+ refuses it, in a post or a
 * structuredClone. A refusal must be the call's own error, the thread serving on.
 */
import { afterEach, expect, it } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { cleanup, start } from './fixtures/runtime-harness.js';
import type { WasmListedInput } from './fixtures/wasm-listed-handler.js';

afterEach(cleanup);

const NODE_20 = builtModuleUrl('test/fixtures/wasm-listed-handler.js');
const STRICT = builtModuleUrl('test/fixtures/wasm-listed-strict-worker.js');

type Result = Extract<WasmListedInput, { mode: 'listed' }>['result'];

it.each<[Result, unknown]>([
  ['primitive', 65_536],
  ['view', new Uint8Array([7, 7, 7, 7])],
  ['object', { bytes: 65_536 }],
])('under Node 20, a %s result: the call answers, the thread serves on', async (result, value) => {
  const rt = await start({ worker: NODE_20, threads: 1 });
  const thread = await rt.run({ mode: 'thread' });
  expect(await rt.run({ mode: 'listed', result })).toEqual(value);
  expect(await rt.run({ mode: 'thread' })).toBe(thread);
  expect(rt.report()).toMatchObject({ state: 'ready', running: 0, failed: 0 });
});

it.each<Result>(['primitive', 'object'])(
  'under Node 21+, a %s result: the call fails OMNI_ERR_TASK_FAILED, the thread serves on',
  async (result) => {
    const rt = await start({ worker: STRICT, threads: 1 });
    const thread = await rt.run({ mode: 'thread' });
    await expect(rt.run({ mode: 'listed', result }, { deadlineMs: 10_000 })).rejects.toMatchObject({
      code: 'OMNI_ERR_TASK_FAILED',
    });
    expect(await rt.run({ mode: 'thread' })).toBe(thread);
    expect(rt.report()).toMatchObject({ state: 'ready', running: 0, failed: 1 });
  },
);
