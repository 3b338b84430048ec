/**
 * The README's claims about the error classes ("API at a glance", Errors), each pinned here where
 * no other test holds it: which built-in error each class extends, that each is named after
 * itself and carries a code of its own, and that the classes' codes are the Errors table's but
 * the six it names as carried by no class.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as errors from '../src/errors.js';
import { packageRoot } from '../src/paths.js';

type ErrorClass = new (...args: never[]) => Error & { code: string };

/** Every error class errors.ts exports (index.ts exports the same ones: error-exports.test.ts). */
const classes = (Object.entries(errors) as [string, unknown][]).filter(
  (entry): entry is [string, ErrorClass] =>
    typeof entry[1] === 'function' && entry[1].prototype instanceof Error,
);

/** One instance of each class, made with the fewest arguments its constructor takes. */
function instanceOf(name: string, Class: ErrorClass): Error & { code: string } {
  const make = Class as unknown as new (...args: unknown[]) => Error & { code: string };
  switch (name) {
    case 'OmniError':
      return new make('OMNI_ERR_WORKERS_OWN', 'a worker error with its own code');
    case 'TooLargeError':
      return new make(2, 1);
    case 'RejectedError':
      return new make('requests', { depth: 1, capacity: 1, rejected: 1 });
    case 'UnavailableError':
      return new make('stopped');
    case 'LibraryNotFoundError':
      return new make('/nonexistent.so');
    case 'AbiMismatchError':
      return new make(1, 2);
    case 'NativeError':
      return new make(3, 'native failure');
    case 'BodyTooLargeError':
      return new make(1024);
    default:
      return new make();
  }
}

describe('README: the error classes', () => {
  it('"InvalidBoundError and InvalidCostError (RangeErrors), InvalidArgumentError (a TypeError)"', () => {
    expect(new errors.InvalidBoundError()).toBeInstanceOf(RangeError);
    expect(new errors.InvalidCostError()).toBeInstanceOf(RangeError);
    expect(new errors.InvalidArgumentError()).toBeInstanceOf(TypeError);
  });

  it('"and, extending OmniError," every other class', () => {
    const others = classes.filter(
      ([name]) =>
        !['InvalidBoundError', 'InvalidCostError', 'InvalidArgumentError', 'OmniError'].includes(name),
    );
    expect(others.length).toBeGreaterThan(20);
    expect(
      others.filter(([, Class]) => !(Class.prototype instanceof errors.OmniError)).map(([n]) => n),
    ).toEqual([]);
  });

  it('"a class per code ..., named after it": one code each, and each instance named as its class', () => {
    const coded = classes.filter(([name]) => name !== 'OmniError');
    const seen = coded.map(([name, Class]) => {
      const err = instanceOf(name, Class);
      return { name, errName: err.name, code: err.code };
    });
    expect(seen.filter((s) => s.name !== s.errName)).toEqual([]);
    expect(seen.filter((s) => !/^OMNI_ERR_[A-Z_]+$/.test(s.code))).toEqual([]);
    expect(new Set(seen.map((s) => s.code)).size).toBe(seen.length);
    // The two the README names: OMNI_ERR_TOO_LARGE is TooLargeError, OMNI_ERR_ABORTED is AbortError.
    expect(seen).toContainEqual({
      name: 'TooLargeError',
      errName: 'TooLargeError',
      code: 'OMNI_ERR_TOO_LARGE',
    });
    expect(seen).toContainEqual({ name: 'AbortError', errName: 'AbortError', code: 'OMNI_ERR_ABORTED' });
  });

  it('"a plain OmniError\'s code is a string: a worker\'s own coded error comes back as one"', () => {
    const err = instanceOf('OmniError', errors.OmniError as unknown as ErrorClass);
    expect(err).toMatchObject({ code: 'OMNI_ERR_WORKERS_OWN', name: 'OmniError' });
  });

  it('"the table below but OMNI_ERR_REQUEST_TIMEOUT, ..., OMNI_ERR_USAGE and OMNI_ERR_BENCH, which no class carries"', () => {
    const readme = readFileSync(join(packageRoot, 'README.md'), 'utf8');
    const start = readme.indexOf('| code | when |');
    const table = readme.slice(start, readme.indexOf('\n\n', start));
    const tableCodes = new Set<string>();
    for (const row of table.split('\n').slice(2)) {
      const cell = row.split('|')[1] ?? '';
      // A row writes its later codes short (`_BAD_REQUEST` for OMNI_ERR_BAD_REQUEST).
      for (const [, name] of cell.matchAll(/`(?:OMNI_ERR)?(_[A-Z_]+[A-Z])`/g))
        tableCodes.add(`OMNI_ERR${name}`);
    }
    const classless = [
      'OMNI_ERR_REQUEST_TIMEOUT',
      'OMNI_ERR_HEADERS_TOO_LARGE',
      'OMNI_ERR_EXPECTATION_FAILED',
      'OMNI_ERR_INTERNAL',
      'OMNI_ERR_USAGE',
      'OMNI_ERR_BENCH',
    ];
    const classCodes = classes
      .filter(([name]) => name !== 'OmniError')
      .map(([name, Class]) => instanceOf(name, Class).code);
    expect([...classCodes, ...classless].sort()).toEqual([...tableCodes].sort());
  });
});
