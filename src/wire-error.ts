/**
 * Errors crossing a thread. Structured clone keeps an Error's name and message but drops its
 * class and fields, so a worker sends `toWire(err)` and the receiver rebuilds the class with
 * `fromWire`: every omni-runtime code comes back as its own class with its plain fields
 * (reason, cost, path, nativeCode...), so `instanceof` and `code` work the same on both sides.
 */
import { types } from 'node:util';
import {
  AbiMismatchError,
  AbortError,
  BadBodyError,
  BadRequestError,
  BodyTooLargeError,
  ClaimsExhaustedError,
  ClosedError,
  DeadlineError,
  describeValue,
  InvalidArgumentError,
  InvalidBoundError,
  InvalidClaimError,
  InvalidCostError,
  LibraryNotFoundError,
  MethodNotAllowedError,
  NativeError,
  NotFoundError,
  NotImplementedError,
  OmniError,
  PermitMovedError,
  PermitReleasedError,
  type RefusalReason,
  RejectedError,
  TaskFailedError,
  TimeoutError,
  TooLargeError,
  UnavailableError,
  UnsupportedMediaTypeError,
  WorkerExitedError,
} from './errors.js';

/** The error's own plain fields: what its class adds to name, message and code. */
export type WireFields = Record<string, string | number | boolean>;

/** The plain shape an error takes to cross a thread. */
export interface WireError {
  /** The error's name ('Error' when it had none that is a string). */
  name: string;
  /** The error's message, or the description of a thrown value that is no error. */
  message: string;
  /** Its string `code`, if it had one; absent, fromWire makes an OMNI_ERR_TASK_FAILED. */
  code?: string;
  /** OMNI_ERR_NATIVE: the C status; kept at the top for the runtime's fatal check. */
  nativeCode?: number;
  /** OMNI_ERR_NATIVE: a sticky error that leaves the native context unusable. */
  fatal?: boolean;
  /** Its other own string, number and boolean properties (the stack never crosses). */
  fields?: WireFields;
}

/**
 * Anything thrown, as wire data. An Error from any realm, or an error-like object (a string
 * `message`), keeps its name, code and plain fields; a property whose getter throws is left out
 * rather than losing the rest; any other value becomes its description.
 */
export function toWire(err: unknown): WireError {
  const e = err as Record<string, unknown> | null;
  const message = typeof err === 'object' && err !== null ? read(e!, 'message') : undefined;
  if (!types.isNativeError(err) && typeof message !== 'string') {
    return { name: 'Error', message: describeValue(err) };
  }
  const name = read(e!, 'name');
  const wire: WireError = {
    name: typeof name === 'string' ? name : 'Error',
    message: typeof message === 'string' ? message : '',
  };
  const code = read(e!, 'code');
  const nativeCode = read(e!, 'nativeCode');
  const fatal = read(e!, 'fatal');
  if (typeof code === 'string') wire.code = code;
  if (typeof nativeCode === 'number') wire.nativeCode = nativeCode;
  if (typeof fatal === 'boolean') wire.fatal = fatal;
  let fields: WireFields | undefined;
  let keys: string[] = [];
  try {
    keys = Object.keys(e!);
  } catch {
    // A proxy that refuses to list its keys: name, message and code still cross.
  }
  for (const key of keys) {
    if (OWN_SLOTS.has(key)) continue;
    const value = read(e!, key);
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      fields ??= {};
      fields[key] = value;
    }
  }
  if (fields !== undefined) wire.fields = fields;
  return wire;
}

/** What the wire carries in its own slots (or never: the stack stays where it was thrown). */
const OWN_SLOTS = new Set(['name', 'message', 'stack', 'code', 'nativeCode', 'fatal']);

/** A property's value, or undefined where reading it throws (a getter, a proxy). */
function read(target: Record<string, unknown>, key: string): unknown {
  try {
    return target[key];
  } catch {
    return undefined;
  }
}

// Each field read once (see fromWire); each maker reads a key at most once.
function num(f: WireFields, key: string): number {
  const value = f[key];
  return typeof value === 'number' ? value : Number.NaN;
}

function str(f: WireFields, key: string): string {
  const value = f[key];
  return typeof value === 'string' ? value : '';
}

/** Rebuilds each code's class from its message and fields. */
const classes: Record<string, (message: string, f: WireFields, wire: WireError) => Error> = {
  OMNI_ERR_INVALID_BOUND: (m) => new InvalidBoundError(m),
  OMNI_ERR_INVALID_COST: (m) => new InvalidCostError(m),
  OMNI_ERR_INVALID_ARGUMENT: (m) => new InvalidArgumentError(m),
  OMNI_ERR_PERMIT_RELEASED: (m) => new PermitReleasedError(m),
  OMNI_ERR_PERMIT_MOVED: (m) => new PermitMovedError(m),
  OMNI_ERR_INVALID_CLAIM: (m) => new InvalidClaimError(m),
  OMNI_ERR_CLAIMS_EXHAUSTED: (m) => new ClaimsExhaustedError(m),
  OMNI_ERR_TOO_LARGE: (m, f) => new TooLargeError(num(f, 'cost'), num(f, 'unitCapacity'), m),
  OMNI_ERR_TIMEOUT: (m) => new TimeoutError(m),
  OMNI_ERR_CLOSED: (m) => new ClosedError(m),
  OMNI_ERR_REJECTED: (m, f) =>
    new RejectedError(
      str(f, 'reason') as RefusalReason,
      { depth: num(f, 'depth'), capacity: num(f, 'capacity'), rejected: num(f, 'rejected') },
      m,
    ),
  OMNI_ERR_ABORTED: (m) => new AbortError(m),
  OMNI_ERR_DEADLINE: (m) => new DeadlineError(m),
  OMNI_ERR_TASK_FAILED: (m) => new TaskFailedError(m),
  OMNI_ERR_WORKER_EXITED: (m) => new WorkerExitedError(m),
  OMNI_ERR_UNAVAILABLE: (m, f) => new UnavailableError(str(f, 'state'), m),
  OMNI_ERR_LIBRARY_NOT_FOUND: (m, f) => new LibraryNotFoundError(str(f, 'path'), m),
  OMNI_ERR_ABI_MISMATCH: (m, f) => new AbiMismatchError(num(f, 'expected'), num(f, 'actual'), m),
  OMNI_ERR_NATIVE: (m, _f, w) => new NativeError(w.nativeCode ?? -1, m, w.fatal === true),
  OMNI_ERR_BAD_BODY: (m) => new BadBodyError(m),
  OMNI_ERR_BODY_TOO_LARGE: (m, f) => new BodyTooLargeError(num(f, 'limit'), m),
  OMNI_ERR_UNSUPPORTED_MEDIA_TYPE: (m) => new UnsupportedMediaTypeError(m),
  OMNI_ERR_NOT_FOUND: (m) => new NotFoundError(m),
  OMNI_ERR_METHOD_NOT_ALLOWED: (m) => new MethodNotAllowedError(m),
  OMNI_ERR_NOT_IMPLEMENTED: (m) => new NotImplementedError(m),
  OMNI_ERR_BAD_REQUEST: (m) => new BadRequestError(m),
};

/**
 * Rebuilds a wire error: an omni-runtime code becomes its class; another code (a user's own)
 * an OmniError with that code and name; no code at all a TaskFailedError keeping the name.
 */
export function fromWire(wire: WireError): Error {
  // A public function: null met its first read as an uncoded TypeError, and 5 came back as a
  // TaskFailedError of no message, as if a worker had thrown it.
  if (typeof wire !== 'object' || wire === null) {
    throw new InvalidArgumentError(
      `fromWire needs a WireError { code?, message, ... }, got ${describeValue(wire)}`,
    );
  }
  // Each field read once, into a plain wire: a getter could answer otherwise on a second read
  // (a code that passed the own-class check, then named an inherited key of the class table).
  const { name, message, code, nativeCode, fatal, fields: given } = wire;
  // A code is a table key and a message an Error's: an object without a prototype, a Symbol or
  // one whose valueOf throws threw an uncoded TypeError (or the caller's own error) as converted.
  if (
    (code !== undefined && typeof code !== 'string') ||
    (message !== undefined && typeof message !== 'string')
  ) {
    throw new InvalidArgumentError(
      `fromWire needs a string code and message, got ${describeValue(code)} and ${describeValue(message)}`,
    );
  }
  const fields = plainFields(given);
  const read: WireError = { name, message, fields };
  if (code !== undefined) read.code = code;
  // Of the types toWire sends, else as if absent: a string nativeCode made a NativeError whose
  // nativeCode, typed a number, was a string.
  if (typeof nativeCode === 'number') read.nativeCode = nativeCode;
  if (typeof fatal === 'boolean') read.fatal = fatal;
  const make = code !== undefined && Object.hasOwn(classes, code) ? classes[code] : undefined;
  if (make !== undefined) {
    // fatal: true failed the runtime whatever the code: the caller sees why (NativeError has its own).
    return carry(make(message, fields, read), fields, read.nativeCode, read.fatal);
  }
  const e = code === undefined ? new TaskFailedError(message) : new OmniError(code, message);
  carryName(e, name, code !== undefined);
  return carry(e, fields, read.nativeCode, read.fatal);
}

/**
 * Gives `error` the name the worker's error had: a string only (a Symbol or an object as the
 * name made the error's toString throw, or run it), not empty, and for an error without a code
 * not 'Error' (its class's own name stands). Also what a thread's uncaught error keeps
 * (runtime/task-failure.ts).
 */
export function carryName(error: Error, name: unknown, coded: boolean): void {
  if (typeof name === 'string' && name !== '' && (coded || name !== 'Error')) error.name = name;
}

/**
 * `error` with whatever else the wire carried: the fields a worker added, nativeCode and fatal
 * (it failed the runtime). Never over what the error has, own or inherited: a field named code,
 * toString or constructor made a TaskFailedError's code another's, or `${err}` throw.
 */
function carry(error: Error, fields: WireFields, nativeCode: unknown, fatal: unknown): Error {
  const extra: Record<string, unknown> = {};
  for (const key of Object.keys(fields)) if (!(key in error)) extra[key] = fields[key];
  if (nativeCode !== undefined && !('nativeCode' in error)) extra.nativeCode = nativeCode;
  if (fatal !== undefined && !('fatal' in error)) extra.fatal = fatal;
  return Object.assign(error, extra);
}

/**
 * The wire's fields as plain data, each read once: its string, number and boolean values (as
 * toWire sends), none that throws as it is read. A Proxy's trap or a getter threw out of fromWire
 * uncoded, and an object under `__proto__` (a parsed wire's own key) became the error's prototype.
 */
function plainFields(given: unknown): WireFields {
  const fields: WireFields = Object.create(null);
  if (typeof given !== 'object' || given === null) return fields;
  let keys: string[] = [];
  try {
    keys = Object.keys(given);
  } catch {
    return fields;
  }
  for (const key of keys) {
    const value = read(given as Record<string, unknown>, key);
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      fields[key] = value;
    }
  }
  return fields;
}
