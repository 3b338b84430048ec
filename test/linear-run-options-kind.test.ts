/**
 * LinearRuntime.run()'s options must be an object, as Runtime.run()'s must: read by
 * destructuring alone, a number or a string has no options and the call ran with the defaults.
 * Nor may they have a key it does not know: a misspelt one was read as absent.
 */
import { afterEach, expect, it } from 'vitest';
import { type LinearRunOptions, LinearRuntime } from '../src/index.js';
import { closeRuntimes, runtimes } from './fixtures/native-runtime-harness.js';
import { rejection } from './fixtures/runtime-harness.js';

afterEach(closeRuntimes);

it('options that are no object: OMNI_ERR_INVALID_ARGUMENT, counted invalid, nothing run', async () => {
  const lr = await LinearRuntime.start({ backend: 'fixture', inFeatures: 4, outFeatures: 2 });
  runtimes.push(lr);
  const x = new Float32Array(4);
  for (const options of [5, 'rows', true]) {
    const err = await rejection(lr.run(x, options as unknown as LinearRunOptions));
    expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
  }
  expect(lr.report()).toMatchObject({ invalid: 3, completed: 0 });
});

it('an unknown key: OMNI_ERR_INVALID_ARGUMENT naming it, counted invalid, nothing admitted', async () => {
  const lr = await LinearRuntime.start({
    backend: 'fixture',
    inFeatures: 4,
    outFeatures: 2,
    admission: { requests: 1, units: 4 },
  });
  runtimes.push(lr);
  const x = new Float32Array(8);
  // `row` for `rows`: read as absent, the call ran as 2 rows; `deadline` ran without one.
  for (const options of [
    { row: 1 },
    { rows: 2, deadline: 5 },
    { rows: 2, cost: 2, signal: undefined, tranfser: [] },
  ]) {
    const err = await rejection(lr.run(x, options as LinearRunOptions));
    expect([options, err.code]).toEqual([options, 'OMNI_ERR_INVALID_ARGUMENT']);
  }
  expect((await rejection(lr.run(x, { row: 1 } as LinearRunOptions))).message).toContain(
    'did you mean rows?',
  );
  expect(lr.report()).toMatchObject({ invalid: 4, completed: 0, depth: 0, units: 0 });
  // Every documented key is still taken.
  const all = {
    rows: 2,
    cost: 2,
    signal: new AbortController().signal,
    deadlineMs: 60_000,
    transfer: [x.buffer as ArrayBuffer],
  } satisfies Required<LinearRunOptions>;
  expect(await lr.run(x, all)).toHaveLength(4);
  expect(lr.report()).toMatchObject({ completed: 1, depth: 0 });
});
