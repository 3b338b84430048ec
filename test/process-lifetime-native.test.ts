/**
 * The native layer, and the HTTP front over it, and the life of the process: each scenario runs
 * in its own process (lifetime-native.ts, lifetime-serve.ts), which must end by itself (exit
 * code 0) once closed; one that does not is killed at the limit (code null).
 */
import { afterEach, expect, it } from 'vitest';
import { killChildren, runScenario } from './fixtures/lifetime-child.js';

afterEach(killChildren);

it('NativeContext: open, upload, call, close, then the process ends', async () => {
  const ended = await runScenario('native-context');
  expect(ended).toEqual({ code: 0, lines: ['rows 6', 'closed true', 'held []', 'exit []'] });
});

it('NativeContext never closed: the process ends all the same', async () => {
  const ended = await runScenario('native-context', ['open']);
  expect(ended).toEqual({ code: 0, lines: ['rows 6', 'exit []'] });
});

it('serve(): listen, answer a call on a kept-alive connection, drain, then the process ends', async () => {
  const ended = await runScenario('serve-drain');
  expect(ended).toEqual({
    code: 0,
    lines: ['linear 200', 'drained {"clean":true,"abandonedRequests":0}', 'runtime stopped', 'exit []'],
  });
});
