/**
 * A post that structured clone refused in this thread is the caller's input, told
 * OMNI_ERR_INVALID_ARGUMENT, even when a thread was lost meanwhile (then the rejection alone
 * decides): each kind of refusal is recognised by itself, not by the no-thread-lost fallback.
 * Errors that only look alike (another DOMException, a worker's DataCloneError rebuilt as a
 * plain Error) are a lost thread's.
 */
import { describe, expect, it } from 'vitest';
import { taskFailure } from '../src/runtime/task-failure.js';

const coded = (code: string): TypeError => Object.assign(new TypeError('refused'), { code });
const codeOf = (err: Error): unknown => (err as { code?: unknown }).code;

describe('taskFailure while a thread was lost: a clone refusal is still the input', () => {
  it.each([
    ['a DataCloneError DOMException', new DOMException('refused', 'DataCloneError')],
    ['a TypeError coded ERR_INVALID_TRANSFER_OBJECT', coded('ERR_INVALID_TRANSFER_OBJECT')],
    [
      'a TypeError coded ERR_MISSING_TRANSFERABLE_IN_TRANSFER_LIST',
      coded('ERR_MISSING_TRANSFERABLE_IN_TRANSFER_LIST'),
    ],
  ])('%s: OMNI_ERR_INVALID_ARGUMENT', (_, refusal) => {
    expect(codeOf(taskFailure(refusal, true, true))).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it.each([
    ['a DOMException of another name', new DOMException('gone', 'AbortError')],
    ['a plain Error named DataCloneError', Object.assign(new Error('gone'), { name: 'DataCloneError' })],
  ])('%s: OMNI_ERR_WORKER_EXITED', (_, err) => {
    expect(codeOf(taskFailure(err, true, true))).toBe('OMNI_ERR_WORKER_EXITED');
  });
});
