/**
 * Every error omni-runtime throws or rejects with. Each class carries a stable `code`
 * (`OMNI_ERR_*`) that callers and tests match on; messages are for people and may change.
 * Errors cross threads as plain data and are rebuilt into these classes (see wire-error.ts).
 *
 * Codes with no class here, on purpose: the command line's UsageError (OMNI_ERR_USAGE, in
 * cli/args.ts) and BenchError (OMNI_ERR_BENCH, cli/bench-error.ts) never leave the CLI process,
 * which prints them and exits, so they are not public API; the HTTP front's
 * OMNI_ERR_REQUEST_TIMEOUT, _HEADERS_TOO_LARGE and _EXPECTATION_FAILED (serve/client-error.ts,
 * serve/header-lines.ts)
 * and OMNI_ERR_INTERNAL (serve/status.ts) only ever appear in an answer's body.
 */
import { inspect } from 'node:util';

/**
 * Why an admission refused: 'requests' (every request slot is held), 'units' (the cost does not
 * fit the units left), 'too-large' (the cost exceeds the whole unit ceiling: it never fits),
 * 'queued' (others wait ahead, so admitting would jump the queue), 'closed' (closed admission).
 */
export type RefusalReason = 'requests' | 'units' | 'too-large' | 'queued' | 'closed';

/** The admission snapshot a refusal reports: the review's `{ depth, capacity, rejected }`. */
export interface RefusalSnapshot {
  /** Outstanding requests as the refusal was reported. */
  readonly depth: number;
  /** The admission's request bound. */
  readonly capacity: number;
  /** Refusals the admission has counted so far, this one included. */
  readonly rejected: number;
}

/**
 * The code of every error class below, one each: each class declares its own as a literal type,
 * so `instanceof` narrows `code` and a check of `code` narrows a union of these classes. A plain
 * OmniError's `code` stays a string: a worker's own coded error is rebuilt as one.
 */
export type OmniErrorCode =
  | 'OMNI_ERR_INVALID_BOUND'
  | 'OMNI_ERR_INVALID_COST'
  | 'OMNI_ERR_INVALID_ARGUMENT'
  | 'OMNI_ERR_PERMIT_RELEASED'
  | 'OMNI_ERR_PERMIT_MOVED'
  | 'OMNI_ERR_INVALID_CLAIM'
  | 'OMNI_ERR_CLAIMS_EXHAUSTED'
  | 'OMNI_ERR_TOO_LARGE'
  | 'OMNI_ERR_TIMEOUT'
  | 'OMNI_ERR_CLOSED'
  | 'OMNI_ERR_REJECTED'
  | 'OMNI_ERR_ABORTED'
  | 'OMNI_ERR_DEADLINE'
  | 'OMNI_ERR_TASK_FAILED'
  | 'OMNI_ERR_WORKER_EXITED'
  | 'OMNI_ERR_UNAVAILABLE'
  | 'OMNI_ERR_LIBRARY_NOT_FOUND'
  | 'OMNI_ERR_ABI_MISMATCH'
  | 'OMNI_ERR_NATIVE'
  | 'OMNI_ERR_BAD_BODY'
  | 'OMNI_ERR_BODY_TOO_LARGE'
  | 'OMNI_ERR_UNSUPPORTED_MEDIA_TYPE'
  | 'OMNI_ERR_NOT_FOUND'
  | 'OMNI_ERR_METHOD_NOT_ALLOWED'
  | 'OMNI_ERR_NOT_IMPLEMENTED'
  | 'OMNI_ERR_BAD_REQUEST';

/**
 * The base class of the coded errors (InvalidBoundError, InvalidCostError and
 * InvalidArgumentError extend RangeError and TypeError instead, with a `code` too). Match on
 * `code`, never the message. A worker's own error with a string `code` this package does not
 * know comes back to the caller as a plain OmniError carrying it.
 */
export class OmniError extends Error {
  /** The stable `OMNI_ERR_*` code (or a worker's own string code); see OmniErrorCode. */
  readonly code: string;
  // ErrorOptions spelt out: the lib declares it from ES2022 on, and these constructors are in the
  // .d.ts a consumer compiles, whose target may be older (TS2304 under skipLibCheck: false).
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/**
 * Thrown at construction: a bound is missing, not a number, zero, negative, fractional or above
 * its maximum (requests 2^29 - 1, or 65,536 for a Runtime; requests and units together must
 * pack into 62 bits), or the bounds are not an object.
 */
export class InvalidBoundError extends RangeError {
  /** Always 'OMNI_ERR_INVALID_BOUND': match on it, not on the message. */
  readonly code = 'OMNI_ERR_INVALID_BOUND';
  constructor(message = 'admission bound must be a positive safe integer') {
    super(message);
    this.name = 'InvalidBoundError';
  }
}

/** A cost is negative, fractional, NaN, infinite, above MAX_SAFE_INTEGER or not a number. */
export class InvalidCostError extends RangeError {
  /** Always 'OMNI_ERR_INVALID_COST': match on it, not on the message. */
  readonly code = 'OMNI_ERR_INVALID_COST';
  constructor(message = 'cost must be a non-negative safe integer') {
    super(message);
    this.name = 'InvalidCostError';
  }
}

/**
 * An option or argument other than a bound or a cost is malformed. `cause`: what the caller's own
 * value threw or what refused it, when it is found by posting it (see runtime/task-failure.ts).
 */
export class InvalidArgumentError extends TypeError {
  /** Always 'OMNI_ERR_INVALID_ARGUMENT': match on it, not on the message. */
  readonly code = 'OMNI_ERR_INVALID_ARGUMENT';
  constructor(message = 'invalid argument', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'InvalidArgumentError';
  }
}

/**
 * A permit released a second time, or a claim released (releaseClaim) when it is spent or stale.
 * Nothing changes: the capacity was given back once.
 */
export class PermitReleasedError extends OmniError {
  /** Always 'OMNI_ERR_PERMIT_RELEASED': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_PERMIT_RELEASED';
  constructor(message = 'permit was already released') {
    super('OMNI_ERR_PERMIT_RELEASED', message);
  }
}

/** release() of a permit already turned into a claim (toClaim()): release the claim instead. */
export class PermitMovedError extends OmniError {
  /** Always 'OMNI_ERR_PERMIT_MOVED': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_PERMIT_MOVED';
  constructor(message = 'permit was moved into a claim; release the claim instead') {
    super('OMNI_ERR_PERMIT_MOVED', message);
  }
}

/** A claim does not belong to this admission (slot out of range, malformed fields). */
export class InvalidClaimError extends OmniError {
  /** Always 'OMNI_ERR_INVALID_CLAIM': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_INVALID_CLAIM';
  constructor(message = 'claim does not belong to this admission') {
    super('OMNI_ERR_INVALID_CLAIM', message);
  }
}

/**
 * toClaim() found every claim slot of the admission in use (it has one per request it bounds, at
 * most 65,536); the permit stays a permit.
 */
export class ClaimsExhaustedError extends OmniError {
  /** Always 'OMNI_ERR_CLAIMS_EXHAUSTED': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_CLAIMS_EXHAUSTED';
  constructor(message = 'every claim slot is in use') {
    super('OMNI_ERR_CLAIMS_EXHAUSTED', message);
  }
}

/** The cost exceeds the whole unit ceiling: it can never fit (an HTTP front answers 413). */
export class TooLargeError extends OmniError {
  /** Always 'OMNI_ERR_TOO_LARGE': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_TOO_LARGE';
  /** The cost (units, or rows for a LinearRuntime call) that was asked for. */
  readonly cost: number;
  /** The whole unit ceiling (or the most rows one call takes) that it exceeds. */
  readonly unitCapacity: number;
  constructor(cost: number, unitCapacity: number, message?: string) {
    super('OMNI_ERR_TOO_LARGE', message ?? `cost ${cost} exceeds the unit ceiling ${unitCapacity}`);
    this.cost = cost;
    this.unitCapacity = unitCapacity;
  }
}

/** admit() waited its `timeoutMs` for room and gave up; nothing is held. */
export class TimeoutError extends OmniError {
  /** Always 'OMNI_ERR_TIMEOUT': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_TIMEOUT';
  constructor(message = 'timed out waiting for admission') {
    super('OMNI_ERR_TIMEOUT', message);
  }
}

/** The admission is closed: admit() refuses, and a waiting admit() rejects, with this. */
export class ClosedError extends OmniError {
  /** Always 'OMNI_ERR_CLOSED': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_CLOSED';
  constructor(message = 'admission is closed') {
    super('OMNI_ERR_CLOSED', message);
  }
}

/** Admission refused the request at once ('requests', 'units', 'queued'). */
export class RejectedError extends OmniError implements RefusalSnapshot {
  /** Always 'OMNI_ERR_REJECTED': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_REJECTED';
  /** Why: 'requests', 'units' or 'queued'. */
  readonly reason: RefusalReason;
  /** Outstanding requests as the refusal was reported. */
  readonly depth: number;
  /** The admission's request bound. */
  readonly capacity: number;
  /** Refusals the admission has counted so far, this one included. */
  readonly rejected: number;
  constructor(reason: RefusalReason, snapshot: RefusalSnapshot, message?: string) {
    // Each read once: read again, a getter could make the message and the fields disagree.
    const { depth, capacity, rejected } = snapshot;
    super('OMNI_ERR_REJECTED', message ?? `admission refused (${reason}): depth ${depth} of ${capacity}`);
    this.reason = reason;
    this.depth = depth;
    this.capacity = capacity;
    this.rejected = rejected;
  }
}

/** The caller's own signal aborted; the work itself may still be running. */
export class AbortError extends OmniError {
  /** Always 'OMNI_ERR_ABORTED': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_ABORTED';
  constructor(message = 'the operation was aborted', options?: { cause?: unknown }) {
    super('OMNI_ERR_ABORTED', message, options);
    this.name = 'AbortError';
  }
}

/** The caller's deadline passed; capacity stays held until the work really ends. */
export class DeadlineError extends OmniError {
  /** Always 'OMNI_ERR_DEADLINE': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_DEADLINE';
  constructor(message = 'deadline exceeded') {
    super('OMNI_ERR_DEADLINE', message);
  }
}

/**
 * A task handler threw an error that carried no code of its own, or its result could not be
 * posted back (the clone error's name and message are kept); at start(), a worker module that
 * threw as it loaded, or an `init` that threw, without a code.
 */
export class TaskFailedError extends OmniError {
  /** Always 'OMNI_ERR_TASK_FAILED': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_TASK_FAILED';
  constructor(message = 'task failed') {
    super('OMNI_ERR_TASK_FAILED', message);
  }
}

/**
 * The worker thread died during the call: it exited, threw uncaught, or was terminated (a close
 * timeout, startTimeoutMs); a runtime that serves on replaces the thread. From start(): a thread
 * exited before it was up, did not come up within startTimeoutMs, or could not be created.
 */
export class WorkerExitedError extends OmniError {
  /** Always 'OMNI_ERR_WORKER_EXITED': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_WORKER_EXITED';
  constructor(message = 'worker exited while running the task', options?: { cause?: unknown }) {
    super('OMNI_ERR_WORKER_EXITED', message, options);
  }
}

/** The runtime is not 'ready' (starting, draining, stopped or failed). */
export class UnavailableError extends OmniError {
  /** Always 'OMNI_ERR_UNAVAILABLE': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_UNAVAILABLE';
  /** The runtime's state when it refused ('starting', 'draining', 'stopped' or 'failed'). */
  readonly state: string;
  constructor(state: string, message?: string) {
    // Own keys only: a state named like an Object.prototype member is no state of the table's.
    const known = Object.hasOwn(UNAVAILABLE_MESSAGES, state) ? UNAVAILABLE_MESSAGES[state] : undefined;
    super('OMNI_ERR_UNAVAILABLE', message ?? known ?? `the runtime is ${state}`);
    this.state = state;
  }
}

/** What each state means for the caller ("runtime is failed" said neither why nor what to do). */
const UNAVAILABLE_MESSAGES: Readonly<Record<string, string>> = {
  starting: 'the runtime is still starting',
  draining: 'the runtime is draining (close() was called): it takes no new calls',
  stopped: 'the runtime is stopped (close() has finished): start another',
  failed: 'the runtime has failed (its `failure` says why) and never recovers: close it and start another',
};

/**
 * A native library is missing, will not load, is not an omni library, is the other backend's, or
 * koffi (which loads it) has no native module of its own.
 */
export class LibraryNotFoundError extends OmniError {
  /** Always 'OMNI_ERR_LIBRARY_NOT_FOUND': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_LIBRARY_NOT_FOUND';
  /** The file tried (for koffi's own failure, koffi's module path). */
  readonly path: string;
  constructor(path: string, message?: string) {
    super('OMNI_ERR_LIBRARY_NOT_FOUND', message ?? `native library not found at ${path}`);
    this.path = path;
  }
}

/** The native library was built for another ABI version than this package's. */
export class AbiMismatchError extends OmniError {
  /** Always 'OMNI_ERR_ABI_MISMATCH': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_ABI_MISMATCH';
  /** The ABI version this package expects. */
  readonly expected: number;
  /** The ABI version the library reports (omni_abi_version()). */
  readonly actual: number;
  constructor(expected: number, actual: number, message?: string) {
    super(
      'OMNI_ERR_ABI_MISMATCH',
      message ?? `native library ABI version ${actual} does not match the expected version ${expected}`,
    );
    this.expected = expected;
    this.actual = actual;
  }
}

/** A native entry point returned an error code; `nativeCode` is the C side's code. */
export class NativeError extends OmniError {
  /** Always 'OMNI_ERR_NATIVE': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_NATIVE';
  /** The C side's `omni_status` (see NativeStatus). */
  readonly nativeCode: number;
  /** A sticky error leaves the native context unusable (the runtime moves to 'failed'). */
  readonly fatal: boolean;
  constructor(nativeCode: number, message: string, fatal = false) {
    super('OMNI_ERR_NATIVE', message);
    this.nativeCode = nativeCode;
    this.fatal = fatal;
  }
}

// The HTTP front's own errors: the request is wrong before any runtime sees it.

/** The body is malformed, truncated, unreadable, or its shape does not match the layer. */
export class BadBodyError extends OmniError {
  /** Always 'OMNI_ERR_BAD_BODY': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_BAD_BODY';
  constructor(message = 'the request body is malformed') {
    super('OMNI_ERR_BAD_BODY', message);
  }
}

/** The body is larger than the server's body limit (the runtime was never asked). */
export class BodyTooLargeError extends OmniError {
  /** Always 'OMNI_ERR_BODY_TOO_LARGE': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_BODY_TOO_LARGE';
  /** The body limit it exceeds, in bytes. */
  readonly limit: number;
  constructor(limit: number, message?: string) {
    super('OMNI_ERR_BODY_TOO_LARGE', message ?? `the request body exceeds the limit of ${limit} bytes`);
    this.limit = limit;
  }
}

/** The body's Content-Type is neither application/octet-stream nor application/json. */
export class UnsupportedMediaTypeError extends OmniError {
  /** Always 'OMNI_ERR_UNSUPPORTED_MEDIA_TYPE': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_UNSUPPORTED_MEDIA_TYPE';
  constructor(
    message = 'send application/octet-stream (float32 LE rows) or application/json ({ "rows": [[...]] })',
  ) {
    super('OMNI_ERR_UNSUPPORTED_MEDIA_TYPE', message);
  }
}

/** No route for this method and path. */
export class NotFoundError extends OmniError {
  /** Always 'OMNI_ERR_NOT_FOUND': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_NOT_FOUND';
  constructor(message = 'no such route') {
    super('OMNI_ERR_NOT_FOUND', message);
  }
}

/**
 * A path this server serves, asked with a method none of its routes takes (its answer's Allow
 * header lists those it does).
 */
export class MethodNotAllowedError extends OmniError {
  /** Always 'OMNI_ERR_METHOD_NOT_ALLOWED': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_METHOD_NOT_ALLOWED';
  constructor(message = 'this resource does not take that method') {
    super('OMNI_ERR_METHOD_NOT_ALLOWED', message);
  }
}

/** A request this server never serves, for any resource: a CONNECT (it is no proxy). */
export class NotImplementedError extends OmniError {
  /** Always 'OMNI_ERR_NOT_IMPLEMENTED': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_NOT_IMPLEMENTED';
  constructor(message = 'not implemented by this server') {
    super('OMNI_ERR_NOT_IMPLEMENTED', message);
  }
}

/** The request is not valid HTTP or names no valid resource (framing, URL, header values). */
export class BadRequestError extends OmniError {
  /** Always 'OMNI_ERR_BAD_REQUEST': match on it, not on the message. */
  declare readonly code: 'OMNI_ERR_BAD_REQUEST';
  constructor(message = 'the request is malformed') {
    super('OMNI_ERR_BAD_REQUEST', message);
  }
}

/**
 * Any value as text, for an error message about it: a string quoted, another primitive as
 * itself, an object or a function inspected ("[object Object]" says nothing, and String() or a
 * template literal even throws for an object without a prototype, as a template literal does for
 * a Symbol). At most about MAX_DESCRIBED characters: the value may be megabytes (a string quoted
 * whole made a message as large, or threw a RangeError past V8's longest string). Never throws,
 * and runs none of the value's own conversions (a function's toString, a Proxy's traps).
 */
export function describeValue(value: unknown): string {
  // Quoted: a '1' given for a number would read as the number 1, the one value not wrong.
  if (typeof value === 'string') {
    if (value.length <= MAX_DESCRIBED) return JSON.stringify(value);
    return `${JSON.stringify(value.slice(0, MAX_DESCRIBED))}... (${value.length} characters)`;
  }
  try {
    // The same for a BigInt: String(5n) is '5', the number that would have been right.
    if (typeof value === 'bigint') return shortened(`${value}n`);
    if (typeof value !== 'object' && typeof value !== 'function') return shortened(String(value));
    // inspect, not String(): it calls no Symbol.toPrimitive or toString of the value's, and looks
    // through a Proxy to its target without running a trap.
    return shortened(inspect(value, INSPECT_OPTIONS));
  } catch {
    // A getter inspect reads (Symbol.toStringTag on a foreign prototype, a function's `name`)
    // may still throw.
    return `${typeof value === 'function' ? 'a function' : 'an object'} that cannot be described`;
  }
}

/** The most characters of a value an error message shows (a string's, quoted, or a description). */
const MAX_DESCRIBED = 1000;

const INSPECT_OPTIONS = {
  depth: 2,
  customInspect: false,
  maxStringLength: 200,
  maxArrayLength: 20,
  breakLength: Number.POSITIVE_INFINITY,
} as const;

/** `text`, cut to MAX_DESCRIBED characters (an object of a million keys inspects to megabytes). */
function shortened(text: string): string {
  if (text.length <= MAX_DESCRIBED) return text;
  return `${text.slice(0, MAX_DESCRIBED)}... (${text.length} characters)`;
}

/**
 * What a thrown value says, for a message: an Error's own message, else the value described.
 * Never throws: the value may be the caller's own (thrown by a getter in its input), and reading
 * its prototype or message may throw again (a getter, a Proxy's trap).
 */
export function describeThrown(err: unknown): string {
  try {
    if (err instanceof Error) return String(err.message);
  } catch {
    // Described below instead.
  }
  return describeValue(err);
}

/**
 * True when `err` carries the given stable code. Never throws: a value whose `code` throws as it
 * is read (a getter, a Proxy's trap) carries none. A type guard, so a caller holding an `unknown`
 * catch value can read `err.code` (and narrow on it) without a cast.
 */
export function hasCode<C extends string>(err: unknown, code: C): err is { readonly code: C } {
  if (typeof err !== 'object' || err === null) return false;
  try {
    return (err as { code?: unknown }).code === code;
  } catch {
    return false;
  }
}
