/**
 * The HTTP status of every code, in one place: each class's code (the record's type makes a new
 * code a compile error until it is given a row here) and the four the HTTP front answers with
 * that have no class. The codes no route of serve() produces (an admission's own, a native
 * library's) reach a client only from a `Served` of the caller's, and are a 500 like any failure.
 */
import { describe, expect, it } from 'vitest';
import * as errors from '../src/errors.js';
import type { OmniErrorCode } from '../src/index.js';
import { answerFor, statusFor } from '../src/serve/index.js';

const CLASS_CODES: Readonly<Record<OmniErrorCode, number>> = {
  OMNI_ERR_INVALID_BOUND: 500,
  OMNI_ERR_INVALID_COST: 400,
  OMNI_ERR_INVALID_ARGUMENT: 400,
  OMNI_ERR_PERMIT_RELEASED: 500,
  OMNI_ERR_PERMIT_MOVED: 500,
  OMNI_ERR_INVALID_CLAIM: 500,
  OMNI_ERR_CLAIMS_EXHAUSTED: 500,
  OMNI_ERR_TOO_LARGE: 413,
  OMNI_ERR_TIMEOUT: 500,
  OMNI_ERR_CLOSED: 500,
  OMNI_ERR_REJECTED: 503,
  OMNI_ERR_ABORTED: 499,
  OMNI_ERR_DEADLINE: 504,
  OMNI_ERR_TASK_FAILED: 500,
  OMNI_ERR_WORKER_EXITED: 500,
  OMNI_ERR_UNAVAILABLE: 503,
  OMNI_ERR_LIBRARY_NOT_FOUND: 500,
  OMNI_ERR_ABI_MISMATCH: 500,
  OMNI_ERR_NATIVE: 500,
  OMNI_ERR_BAD_BODY: 400,
  OMNI_ERR_BODY_TOO_LARGE: 413,
  OMNI_ERR_UNSUPPORTED_MEDIA_TYPE: 415,
  OMNI_ERR_NOT_FOUND: 404,
  OMNI_ERR_METHOD_NOT_ALLOWED: 405,
  OMNI_ERR_NOT_IMPLEMENTED: 501,
  OMNI_ERR_BAD_REQUEST: 400,
};

/** The HTTP front's codes that only ever appear in an answer's body (errors.ts says which). */
const CLASSLESS: Readonly<Record<string, number>> = {
  OMNI_ERR_REQUEST_TIMEOUT: 408,
  OMNI_ERR_HEADERS_TOO_LARGE: 431,
  OMNI_ERR_EXPECTATION_FAILED: 417,
  OMNI_ERR_INTERNAL: 500,
};

type ErrorClass = new (...args: unknown[]) => Error & { code: string };

/** One instance of every error class errors.ts exports but OmniError, their base. */
function everyClassInstance(): (Error & { code: string })[] {
  const made: (Error & { code: string })[] = [];
  for (const [name, value] of Object.entries(errors)) {
    if (typeof value !== 'function' || !(value.prototype instanceof Error) || name === 'OmniError') continue;
    const Class = value as unknown as ErrorClass;
    // Constructors that take fields first; the rest take an optional message.
    const args: Record<string, unknown[]> = {
      TooLargeError: [9, 4],
      RejectedError: ['requests', { depth: 1, capacity: 1, rejected: 1 }],
      UnavailableError: ['draining'],
      LibraryNotFoundError: ['/nonexistent.so'],
      AbiMismatchError: [1, 2],
      NativeError: [7, 'native failure'],
      BodyTooLargeError: [1024],
    };
    made.push(new Class(...(args[name] ?? [])));
  }
  return made;
}

describe('every code has its status', () => {
  it.each(Object.entries({ ...CLASS_CODES, ...CLASSLESS }))('%s: %i', (code, status) => {
    expect(statusFor(code)).toBe(status);
    // Retry-After only for a refusal: the one status a client is told to retry soon.
    expect(answerFor(new errors.OmniError(code, 'm')).retry).toBe(code === 'OMNI_ERR_REJECTED');
  });

  it('each class answers with its own code and the status of its row', () => {
    const seen = everyClassInstance().map((e) => [e.code, answerFor(e).status, answerFor(e).body.code]);
    expect(seen).toHaveLength(Object.keys(CLASS_CODES).length);
    expect(seen).toEqual(seen.map(([code]) => [code, CLASS_CODES[code as OmniErrorCode], code]));
  });
});
