/**
 * The claims of docs/api.md ("API at a glance", Errors) about the error classes, and of
 * docs/http.md about an error answer's body, each pinned here where
 * no other test holds it: which built-in error each class extends, that each is named after
 * itself and carries a code of its own, and that the classes' codes are the Errors table's but
 * the six it names as carried by no class.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as errors from '../src/errors.js';
import { packageRoot } from '../src/paths.js';
import { answerFor } from '../src/serve/index.js';
import { fromHttpStack } from '../src/serve/status.js';

const api = readFileSync(join(packageRoot, 'docs', 'api.md'), 'utf8');
const http = readFileSync(join(packageRoot, 'docs', 'http.md'), 'utf8');

/** The Errors table's rows, as text. */
function errorsTable(): string[] {
  const start = api.indexOf('| code | when |');
  expect(start).toBeGreaterThan(0);
  return api.slice(start, api.indexOf('\n\n', start)).split('\n').slice(2);
}

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

describe('docs/api.md: the error classes', () => {
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
    // The two the page names: OMNI_ERR_TOO_LARGE is TooLargeError, OMNI_ERR_ABORTED is AbortError.
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
    const tableCodes = new Set<string>();
    for (const row of errorsTable()) {
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

  it("each class's own fields are named in its row of the Errors table", () => {
    // A user reads `cost`, `state` or `path` off an error: the table is where they are told of it.
    const unnamed: string[] = [];
    for (const [name, Class] of classes.filter(([n]) => n !== 'OmniError')) {
      const err = instanceOf(name, Class);
      // Its code in the first cell, in full or short (`_BODY_TOO_LARGE`), not inside a longer one.
      const short = err.code.replace(/^OMNI_ERR/, '');
      const row =
        errorsTable().find((r) => (r.split('|')[1] ?? '').includes(`\`OMNI_ERR${short}\``)) ??
        errorsTable().find((r) => (r.split('|')[1] ?? '').includes(`\`${short}\``));
      const fields = Object.keys(err).filter((k) => k !== 'code' && k !== 'name');
      for (const field of fields) if (!row?.includes(`\`${field}\``)) unnamed.push(`${name}.${field}`);
    }
    expect(unnamed).toEqual([]);
  });
});

describe("docs/http.md: an error answer's body", () => {
  it('"each with a JSON body { code, message } ..., plus reason, nativeCode, state, cost and unitCapacity, limit, and detail"', () => {
    const at = http.indexOf('The answers that are not a result, each with a JSON body');
    expect(at).toBeGreaterThan(0);
    const sentence = http.slice(at, http.indexOf(':\n', at));
    const named = new Set([...sentence.matchAll(/`([a-zA-Z]+)`/g)].map((m) => m[1]));
    named.add('code').add('message');
    // Every field an answer's body can carry, each set once.
    const bodies = [
      new errors.RejectedError('units', { depth: 1, capacity: 1, rejected: 1 }),
      new errors.NativeError(7, 'native failure'),
      new errors.UnavailableError('failed'),
      new errors.TooLargeError(9, 4),
      new errors.BodyTooLargeError(1024),
      fromHttpStack(Object.assign(new Error('bad url'), { code: 'FST_ERR_BAD_URL', statusCode: 400 }), 1),
    ].map((e) => answerFor(e).body);
    const carried = new Set(bodies.flatMap((b) => Object.keys(b)));
    expect([...carried].sort()).toEqual([
      'code',
      'cost',
      'detail',
      'limit',
      'message',
      'nativeCode',
      'reason',
      'state',
      'unitCapacity',
    ]);
    expect([...carried].filter((k) => !named.has(k))).toEqual([]);
  });
});
