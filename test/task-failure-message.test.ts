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

describe("a worker's failure, its capacity given back by the worker: the error's name is kept", () => {
  it.each<[string, unknown, string]>([
    [
      'a rebuilt DataCloneError',
      Object.assign(new Error('refused'), { name: 'DataCloneError' }),
      'DataCloneError',
    ],
    ['a TypeError', new TypeError('bad'), 'TypeError'],
    ['a plain Error', new Error('plain'), 'TaskFailedError'],
    ['an empty name', Object.assign(new Error('x'), { name: '' }), 'TaskFailedError'],
    ['a name that is not a string', { name: Symbol('s'), message: 'm' }, 'TaskFailedError'],
    ['no value at all', undefined, 'TaskFailedError'],
  ])('%s', (_, thrown, name) => {
    const err = taskFailure(thrown, false, false);
    expect(err).toMatchObject({ code: 'OMNI_ERR_TASK_FAILED', name });
    expect(() => String(err)).not.toThrow();
  });

  it('a name getter that throws: the class name stands, the call still rejects with a message', () => {
    const hostile = {
      message: 'still said',
      get name(): string {
        throw new Error('read');
      },
    };
    expect(taskFailure(hostile, false, false)).toMatchObject({
      code: 'OMNI_ERR_TASK_FAILED',
      name: 'TaskFailedError',
      message: 'still said',
    });
  });
});
