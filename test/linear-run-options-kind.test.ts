/**
 * LinearRuntime.run()'s options must be an object, as Runtime.run()'s must: read by
 * destructuring alone, a number or a string has no options and the call ran with the defaults.
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
