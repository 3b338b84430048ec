/**
 * Errors crossing a thread. Structured clone keeps an Error's name and message but drops its
 * class and fields, so a worker sends `toWire(err)` and the receiver rebuilds the class with
 * `fromWire`: every omni-runtime code comes back as its own class with its plain fields
 * (reason, cost, path, nativeCode...), so `instanceof` and `code` work the same on both sides.
 */
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
  NativeError,
  NotFoundError,
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
  name: string;
  message: string;
  code?: string;
  /** OMNI_ERR_NATIVE: the C status; kept at the top for the runtime's fatal check. */
  nativeCode?: number;
  fatal?: boolean;
  fields?: WireFields;
}

export function toWire(err: unknown): WireError {
  if (!(err instanceof Error)) return { name: 'Error', message: describeValue(err) };
  const e = err as Error & { code?: unknown; nativeCode?: unknown; fatal?: unknown };
  const wire: WireError = { name: e.name, message: e.message };
  if (typeof e.code === 'string') wire.code = e.code;
  if (typeof e.nativeCode === 'number') wire.nativeCode = e.nativeCode;
  if (typeof e.fatal === 'boolean') wire.fatal = e.fatal;
  let fields: WireFields | undefined;
  for (const [key, value] of Object.entries(err)) {
    if (key === 'code' || key === 'nativeCode' || key === 'fatal') continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      fields ??= {};
      fields[key] = value;
    }
  }
  if (fields !== undefined) wire.fields = fields;
  return wire;
}

const num = (f: WireFields, key: string): number => (typeof f[key] === 'number' ? f[key] : Number.NaN);
const str = (f: WireFields, key: string): string => (typeof f[key] === 'string' ? f[key] : '');

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
  OMNI_ERR_BAD_REQUEST: (m) => new BadRequestError(m),
};

/**
 * Rebuilds a wire error: an omni-runtime code becomes its class; another code (a user's own)
 * an OmniError with that code and name; no code at all a TaskFailedError keeping the name.
 */
export function fromWire(wire: WireError): Error {
  const fields = wire.fields ?? {};
  if (wire.code === undefined) {
    const e = new TaskFailedError(wire.message);
    if (wire.name && wire.name !== 'Error') e.name = wire.name;
    return e;
  }
  const make = Object.hasOwn(classes, wire.code) ? classes[wire.code] : undefined;
  if (make !== undefined) return make(wire.message, fields, wire);
  const e = new OmniError(wire.code, wire.message);
  e.name = wire.name;
  return Object.assign(e, fields);
}
