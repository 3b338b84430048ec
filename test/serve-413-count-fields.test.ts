/**
 * A 413's count fields (cost, unitCapacity; limit) are sent only as counts a client can use: a
 * finite number >= 0 (0 included), never Infinity or NaN (which JSON sends as null), and each
 * only on its own code's body.
 */
import { describe, expect, it } from 'vitest';
import { OmniError, TooLargeError } from '../src/index.js';
import { answerFor } from '../src/serve/index.js';

const coded = (code: string, fields: Record<string, unknown>): OmniError =>
  Object.assign(new OmniError(code, 'm'), fields);

describe("answerFor: a 413's count fields", () => {
  it('0 is a count: sent', () => {
    expect(answerFor(new TooLargeError(0, 0)).body).toMatchObject({ cost: 0, unitCapacity: 0 });
    expect(answerFor(coded('OMNI_ERR_BODY_TOO_LARGE', { limit: 0 })).body).toMatchObject({ limit: 0 });
  });

  it.each([Number.POSITIVE_INFINITY, Number.NaN, -1])('%s is no count: left out', (bad) => {
    const { body } = answerFor(new TooLargeError(bad, bad));
    expect(body.code).toBe('OMNI_ERR_TOO_LARGE');
    expect('cost' in body || 'unitCapacity' in body).toBe(false);
    expect('limit' in answerFor(coded('OMNI_ERR_BODY_TOO_LARGE', { limit: bad })).body).toBe(false);
  });

  it("each field only on its own code's body", () => {
    const other = answerFor(coded('OMNI_ERR_INVALID_ARGUMENT', { cost: 1, unitCapacity: 2, limit: 3 })).body;
    expect(other).not.toHaveProperty('cost');
    expect(other).not.toHaveProperty('unitCapacity');
    expect(other).not.toHaveProperty('limit');
    expect(answerFor(coded('OMNI_ERR_TOO_LARGE', { limit: 3 })).body).not.toHaveProperty('limit');
    expect(answerFor(coded('OMNI_ERR_BODY_TOO_LARGE', { cost: 1 })).body).not.toHaveProperty('cost');
  });
});
