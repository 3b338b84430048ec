/** The status table (src/serve/status.ts) and how HTTP-stack errors are rewritten into it. */
import { describe, expect, it } from 'vitest';
import {
  AbortError,
  DeadlineError,
  InvalidArgumentError,
  InvalidCostError,
  NativeError,
  OmniError,
  RejectedError,
  TaskFailedError,
  TooLargeError,
  UnavailableError,
  WorkerExitedError,
} from '../src/index.js';
import { answerFor, BadBodyError, BodyTooLargeError, statusFor } from '../src/serve/index.js';
import { codeOf, fromHttpStack } from '../src/serve/status.js';

const snapshot = { depth: 2, capacity: 2, rejected: 1 };

describe('answerFor', () => {
  it.each([
    ['refused: requests', new RejectedError('requests', snapshot), 503, true],
    ['refused: units', new RejectedError('units', snapshot), 503, true],
    ['refused: queued', new RejectedError('queued', snapshot), 503, true],
    ['unavailable', new UnavailableError('draining'), 503, false],
    ['never fits', new TooLargeError(9, 4), 413, false],
    ['bad body', new BadBodyError(), 400, false],
    ['invalid argument', new InvalidArgumentError(), 400, false],
    ['invalid cost', new InvalidCostError(), 400, false],
    ['deadline', new DeadlineError(), 504, false],
    ['native', new NativeError(7, 'boom'), 500, false],
    ['worker exited', new WorkerExitedError(), 500, false],
    ['task failed', new TaskFailedError(), 500, false],
    ['uncoded', new Error('?'), 500, false],
    ['not an error', 'a string', 500, false],
  ])('%s: %i', (_name, error, status, retry) => {
    const answer = answerFor(error);
    expect(answer.status).toBe(status);
    expect(answer.retry).toBe(retry);
    expect(typeof answer.body.code).toBe('string');
    expect(typeof answer.body.message).toBe('string');
  });

  it('carries the reason, native code and state in the body', () => {
    expect(answerFor(new RejectedError('units', snapshot)).body).toMatchObject({
      code: 'OMNI_ERR_REJECTED',
      reason: 'units',
    });
    expect(answerFor(new NativeError(7, 'boom')).body).toMatchObject({
      code: 'OMNI_ERR_NATIVE',
      nativeCode: 7,
    });
    expect(answerFor(new UnavailableError('failed')).body).toMatchObject({ state: 'failed' });
    // A 413 says what would fit; a count that is no finite count (NaN has no JSON) is left out.
    expect(answerFor(new TooLargeError(9, 4)).body).toMatchObject({ cost: 9, unitCapacity: 4 });
    expect(answerFor(new BodyTooLargeError(1024)).body).toMatchObject({ limit: 1024 });
    expect(Object.keys(answerFor(new TooLargeError(Number.NaN, -1)).body)).toEqual(['code', 'message']);
    // Only for those codes: a cost on another error is not a 413's.
    expect(Object.keys(answerFor(Object.assign(new DeadlineError(), { cost: 3 })).body)).toEqual([
      'code',
      'message',
    ]);
    expect(answerFor(new Error('?')).body.code).toBe('OMNI_ERR_INTERNAL');
  });

  it('labels refusals by reason, others by the code in words', () => {
    expect(answerFor(new RejectedError('requests', snapshot)).label).toBe('requests');
    expect(answerFor(new TooLargeError(9, 4)).label).toBe('too-large');
    expect(answerFor(new UnavailableError('draining')).label).toBe('unavailable');
  });

  it("node:http's own limits: 408, 417 and 431, never retried; a client that left: 499", () => {
    expect(statusFor('OMNI_ERR_REQUEST_TIMEOUT')).toBe(408);
    expect(statusFor('OMNI_ERR_HEADERS_TOO_LARGE')).toBe(431);
    expect(statusFor('OMNI_ERR_EXPECTATION_FAILED')).toBe(417);
    expect(answerFor(new OmniError('OMNI_ERR_HEADERS_TOO_LARGE', 'big')).retry).toBe(false);
    expect(answerFor(new AbortError())).toMatchObject({ status: 499, retry: false });
  });

  it('a value that is no Error: none of its fields is read, it is a 500 OMNI_ERR_INTERNAL', () => {
    const lookalike = {
      code: 'OMNI_ERR_REJECTED',
      reason: 'requests',
      state: 'draining',
      detail: 'd',
      nativeCode: 7,
    };
    const answer = answerFor(lookalike);
    expect({ status: answer.status, retry: answer.retry, label: answer.label }).toEqual({
      status: 500,
      retry: false,
      label: 'internal',
    });
    expect(Object.keys(answer.body)).toEqual(['code', 'message']);
    expect(answer.body.code).toBe('OMNI_ERR_INTERNAL');
    // Nor is a Proxy that will not say what it is, whatever its fields answer.
    const unsaid = new Proxy(lookalike, {
      getPrototypeOf: () => {
        throw new Error('trap');
      },
    });
    expect(answerFor(unsaid)).toMatchObject({ status: 500, body: { code: 'OMNI_ERR_INTERNAL' } });
  });

  it('an Error field of the wrong type is left out of the body', () => {
    const odd = Object.assign(new Error('odd'), {
      code: 'OMNI_ERR_NATIVE',
      reason: 5,
      nativeCode: '7',
      state: 1,
      detail: {},
    });
    const answer = answerFor(odd);
    expect(answer.status).toBe(500);
    expect(Object.keys(answer.body)).toEqual(['code', 'message']);
    expect(answer.label).toBe('native');
  });

  it('statusFor agrees with answerFor', () => {
    expect(statusFor('OMNI_ERR_REJECTED', 'units')).toBe(503);
    expect(statusFor('OMNI_ERR_TOO_LARGE')).toBe(413);
    expect(statusFor('OMNI_ERR_DEADLINE')).toBe(504);
    expect(statusFor('OMNI_ERR_SOMETHING_NEW')).toBe(500);
  });

  // A handler's own code is any string: one naming a property every object inherits found that
  // property (a function) as its row, and the answer had no status.
  it('a code that names an Object.prototype property is a 500 like any code it does not know', () => {
    for (const code of ['constructor', 'toString', '__proto__']) {
      expect(statusFor(code)).toBe(500);
      expect(answerFor(Object.assign(new Error('x'), { code })).status).toBe(500);
      expect(statusFor('OMNI_ERR_REJECTED', code)).toBe(503);
    }
  });
});

describe('fromHttpStack', () => {
  const coded = (code: string, statusCode?: number): Error =>
    Object.assign(new Error(code), { code, ...(statusCode === undefined ? {} : { statusCode }) });

  it.each([
    ['FST_ERR_CTP_BODY_TOO_LARGE', 413, 413, 'OMNI_ERR_BODY_TOO_LARGE'],
    ['FST_ERR_CTP_INVALID_MEDIA_TYPE', 415, 415, 'OMNI_ERR_UNSUPPORTED_MEDIA_TYPE'],
    ['FST_ERR_CTP_INVALID_JSON_BODY', 400, 400, 'OMNI_ERR_BAD_BODY'],
    ['FST_ERR_CTP_EMPTY_JSON_BODY', 400, 400, 'OMNI_ERR_BAD_BODY'],
    ['FST_ERR_CTP_INVALID_CONTENT_LENGTH', 400, 400, 'OMNI_ERR_BAD_BODY'],
    // A body that stopped arriving is unreadable, never "too large".
    ['ECONNRESET', undefined, 400, 'OMNI_ERR_BAD_BODY'],
    ['FST_ERR_BAD_URL', 400, 400, 'OMNI_ERR_BAD_REQUEST'],
  ])('%s -> %i', (code, statusCode, status, ours) => {
    const rewritten = fromHttpStack(coded(code, statusCode as number | undefined), 1024);
    const answer = answerFor(rewritten);
    expect(answer.status).toBe(status);
    expect(answer.body).toMatchObject({ code: ours, detail: code });
  });

  it('leaves omni-runtime errors and unknown errors alone', () => {
    const ours = new DeadlineError();
    expect(fromHttpStack(ours, 1)).toBe(ours);
    // A worker's Error('aborted') arrives as a TaskFailedError: a 500, not node's aborted body.
    const failed = new TaskFailedError('aborted');
    expect(answerFor(fromHttpStack(failed, 1)).status).toBe(500);
    const other = new Error('boom');
    expect(fromHttpStack(other, 1)).toBe(other);
  });

  it('takes no field of a value that is no Error, and never throws on one', () => {
    // A statusCode of 4xx is fastify's mark on its own errors: on anything else it is no 400.
    expect(answerFor(fromHttpStack({ statusCode: 404, code: 'FST_ERR_BAD_URL' }, 1)).status).toBe(500);
    const trap = (): never => {
      throw new Error('trap');
    };
    const hostile = new Proxy({}, { get: trap, getPrototypeOf: trap, has: trap });
    expect(answerFor(fromHttpStack(hostile, 1)).body.code).toBe('OMNI_ERR_INTERNAL');
    // An Error, as its type says, whatever it was given.
    expect(fromHttpStack('not an error', 1)).toBeInstanceOf(Error);
    expect(fromHttpStack(hostile, 1)).toBeInstanceOf(Error);
  });

  it("codeOf reads an Error's code alone, not one on any other value", () => {
    expect(codeOf(Object.assign(new Error('x'), { code: 'OMNI_ERR_REJECTED' }))).toBe('OMNI_ERR_REJECTED');
    // A call rejecting with such a value as the drain abandons it would be taken for its thread lost.
    expect(codeOf({ code: 'OMNI_ERR_WORKER_EXITED' })).toBeUndefined();
  });
});
