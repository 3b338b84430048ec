/**
 * The keys a set-up options object may have. A misspelt option would otherwise be read as
 * absent and take its default without a word (`{ requests: 4, unit: 100 }` made a request-only
 * admission); TypeScript's excess-property check misses spread or computed objects and every
 * JavaScript caller.
 *
 * Each options type keeps its list beside its interface as an `OptionKeys<T>`: a key missing
 * from the list, or one the interface lacks, is a compile error, so the list cannot drift.
 *
 * run()'s options are checked too, by checkCallKeys (tens of nanoseconds, no allocation, against
 * a thread round trip of microseconds); admit()'s are not: that would cost every admission,
 * itself tens of nanoseconds, on the hot path.
 *
 * Throws: InvalidArgumentError for options that are not an object or have an own enumerable
 * string key the list lacks (whatever its value: an explicit `unit: undefined` is as misspelt).
 * Inherited keys and symbols are not options anyone reads by mistake, and are not looked at.
 */
import { describeValue, InvalidArgumentError } from './errors.js';
import { nearestName } from './nearest-name.js';

/** Every key of T, each exactly once (the values are ignored). */
export type OptionKeys<T> = { readonly [K in keyof T]-?: true };

/** Any options type's list, as the check reads it. */
export type KnownKeys = { readonly [key: string]: true };

export function checkOptionKeys(what: string, options: unknown, known: KnownKeys): void {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError(`${what} must be an object, got ${describeValue(options)}`);
  }
  for (const key of Object.keys(options)) if (!Object.hasOwn(known, key)) refuseKey(what, key, known);
}

/**
 * checkOptionKeys for the options object of every call (run()'s), on the dispatch path: the
 * same refusal, but no array is made while every key is known (for...in walks them in place,
 * own keys first, in Object.keys' order; inherited ones are skipped as there). The caller has
 * checked that `options` is an object.
 */
export function checkCallKeys(what: string, options: object, known: KnownKeys): void {
  for (const key in options) {
    if (!Object.hasOwn(known, key) && Object.hasOwn(options, key)) refuseKey(what, key, known);
  }
}

function refuseKey(what: string, key: string, known: KnownKeys): never {
  const valid = Object.keys(known);
  const near = nearestName(key, valid);
  throw new InvalidArgumentError(
    `${what} has no option ${JSON.stringify(key)}${near ? ` (did you mean ${near}?)` : ''}; valid: ${valid.join(', ')}`,
  );
}
