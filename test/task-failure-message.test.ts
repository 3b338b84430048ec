/**
 * What a caller reads when a task failed with a value that is not an Error: a plain object
 * carrying a string message (a caller's getter that throws one while a thread was lost, say)
 * reads as that message, anything else is described rather than printed as "[object Object]".
 */
import { describe, expect, it } from 'vitest';
import { messageOf, taskFailure } from '../src/runtime/task-failure.js';

describe('a failure value that is not an Error', () => {
  it('a plain object with a string message: that message, as the WorkerExitedError says', () => {
    const err = taskFailure({ message: 'the getter gave up' }, true, true);
    expect((err as { code?: string }).code).toBe('OMNI_ERR_WORKER_EXITED');
    expect(err.message).toBe('the getter gave up');
    expect(messageOf(Object.assign(Object.create(null), { message: 'no prototype' }))).toBe('no prototype');
  });

  it('a message that is not a string, or a getter that throws: described instead', () => {
    expect(messageOf({ message: 42 })).toMatch(/^the worker failed with a value that is not an Error: /);
    const hostile = {
      get message(): string {
        throw new Error('read');
      },
    };
    expect(messageOf(hostile)).toMatch(/^the worker failed with a value that is not an Error: /);
  });
});
