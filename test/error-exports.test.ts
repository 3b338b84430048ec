/**
 * src/index.ts names its error exports one by one (an export list, not `export *`, so internal
 * helpers of errors.ts stay internal): every error class errors.ts defines must still reach
 * users, the same class, so `instanceof` works on what the library throws.
 */
import { describe, expect, it } from 'vitest';
import * as errors from '../src/errors.js';
import * as api from '../src/index.js';
import * as serveApi from '../src/serve/index.js';

const classes = Object.entries(errors).filter(
  ([, value]) => typeof value === 'function' && value.prototype instanceof Error,
);

describe('error exports', () => {
  it('omni-runtime exports every error class of errors.ts, the same class', () => {
    expect(classes.length).toBeGreaterThan(20);
    const exported = api as Record<string, unknown>;
    expect(classes.filter(([name, value]) => exported[name] !== value).map(([name]) => name)).toEqual([]);
  });

  it('the HTTP classes omni-runtime/serve exports are the same classes', () => {
    const exported = Object.entries(serveApi).filter(([name]) => name.endsWith('Error'));
    expect(exported.length).toBeGreaterThan(4);
    for (const [name, value] of exported) expect(value).toBe((errors as Record<string, unknown>)[name]);
  });

  it('internal helpers stay internal', () => {
    expect('describeValue' in api).toBe(false);
    expect(typeof api.hasCode).toBe('function');
  });
});
