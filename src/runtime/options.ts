import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isArrayBuffer } from 'node:util/types';
import type { ResourceLimits } from 'node:worker_threads';
import { isAbortSignal } from '../abort-signal.js';
import { BOUNDS_KEYS, checkBounds } from '../admission/bounds.js';
import type { AdmissionBounds } from '../admission/index.js';
import { MAX_CLAIM_SLOTS } from '../admission/layout.js';
import { describeThrown, describeValue, InvalidArgumentError } from '../errors.js';
import { checkCallKeys, checkOptionKeys, type OptionKeys } from '../option-keys.js';
import { checkThreadEnds, type ThreadEnds } from './thread-ends.js';

/**
 * A runtime's bound: AdmissionBounds (`requests` at most 65,536 here, one claim slot per call)
 * plus `wait`. Read once, at start.
 */
export interface RuntimeAdmissionOptions extends AdmissionBounds {
  /**
   * Queue FIFO for room (honouring the caller's signal and deadline) instead of refusing
   * (default false: a call without room rejects OMNI_ERR_REJECTED at once).
   */
  readonly wait?: boolean | undefined;
}

export const RUNTIME_ADMISSION_KEYS: OptionKeys<RuntimeAdmissionOptions> = { ...BOUNDS_KEYS, wait: true };

/**
 * Runtime.start()'s options, each read once; an unknown key or a malformed value is
 * OMNI_ERR_INVALID_ARGUMENT (a bound's, OMNI_ERR_INVALID_BOUND), before any thread starts.
 */
export interface RuntimeOptions {
  /**
   * Built JavaScript module whose default export is `defineWorker(...)`: a path, or a file: or
   * data: URL.
   */
  readonly worker: string | URL;
  /** Handed to the worker's `init` in every thread (structured clone). */
  readonly workerData?: unknown;
  /** Worker threads, a fixed count: an integer from 1 to 256 (default 1). */
  readonly threads?: number | undefined;
  /**
   * The bound. Without it the runtime is the default serial scheduler: one task per worker at
   * a time, an unbounded queue in submission order, never a refusal.
   */
  readonly admission?: RuntimeAdmissionOptions | undefined;
  /**
   * Default deadline for run() in milliseconds, any number > 0 (none by default; Infinity:
   * none). A call past it rejects OMNI_ERR_DEADLINE; its capacity stays held until the work ends.
   */
  readonly deadlineMs?: number | undefined;
  /**
   * piscina's: no effect on a runtime, whose thread count is fixed (piscina ends idle threads
   * only above its minimum, which is `threads` here). Checked and passed on all the same.
   */
  readonly idleTimeout?: number | undefined;
  /**
   * Node's limits for each thread (the four `...Mb` fields, in MB: numbers > 0, `stackSizeMb`
   * >= 1, each at most 1,048,576). A misspelt, non-numeric or out-of-range one is
   * OMNI_ERR_INVALID_ARGUMENT: Node would ignore it without a word, or end the whole process.
   */
  readonly resourceLimits?: ResourceLimits | undefined;
  /**
   * How long start() waits for every thread to load and answer, and close() for the close hooks;
   * also how long a thread started after start() (a lost thread's replacement, or one piscina
   * starts for a waiting call) has to come up: past it the runtime fails (whenFailed), and that
   * thread is terminated, rejecting the call it held (default 30 s; any length, Infinity: no
   * limit).
   */
  readonly startTimeoutMs?: number | undefined;
  /**
   * Told on the main thread of every thread's exit and, last, that every thread has exited: to
   * give back what a thread took that its close hook did not free (one terminated by a close
   * timeout, or dead mid-life). Its functions are read once, at start, and called as its
   * methods; one that throws (or whose promise rejects: it is not awaited) is an
   * OmniRuntimeWarning (its `cause` what was thrown), never a failure of close() or start().
   */
  readonly threadEnds?: ThreadEnds | undefined;
}

export const RUNTIME_KEYS: OptionKeys<RuntimeOptions> = {
  worker: true,
  workerData: true,
  threads: true,
  admission: true,
  deadlineMs: true,
  idleTimeout: true,
  resourceLimits: true,
  startTimeoutMs: true,
  threadEnds: true,
};

/**
 * Runtime.run()'s per-call options, each read once; malformed or an unknown own key:
 * OMNI_ERR_INVALID_ARGUMENT (a cost, OMNI_ERR_INVALID_COST), before anything is admitted.
 */
export interface RunOptions {
  /**
   * The request's cost in the admission's unit, a non-negative safe integer (default 1). Above
   * the unit ceiling the call rejects OMNI_ERR_TOO_LARGE: it can never fit.
   */
  readonly cost?: number | undefined;
  /**
   * The caller's signal: rejects the caller at once; the work is asked to stop, not killed. One
   * that takes no listener (its own `constructor` throws as Node's addEventListener reads it)
   * rejects the call with that error before admission, counted `invalid`, whatever the load.
   */
  readonly signal?: AbortSignal | undefined;
  /**
   * Overrides the runtime's default deadline for this call, in milliseconds: a number > 0
   * (Infinity: none).
   */
  readonly deadlineMs?: number | undefined;
  /**
   * ArrayBuffers in `input` to move zero-copy: detached on the caller's side when a thread takes
   * the call (for a queued call, after run() returned; the input is read then too, this array
   * itself at run()). Treat them as given away at run(): a queued call settled by an abort or
   * deadline is still taken (then skipped), and detaches them then. piscina's `move(input)`
   * works too.
   */
  readonly transfer?: readonly ArrayBuffer[] | undefined;
}

/** run()'s keys, checked on every call (checkCallKeys: no allocation, tens of nanoseconds). */
export const RUN_KEYS: OptionKeys<RunOptions> = {
  cost: true,
  signal: true,
  deadlineMs: true,
  transfer: true,
};

export interface CheckedRuntimeOptions {
  readonly moduleUrl: string;
  readonly workerData: unknown;
  readonly threads: number;
  readonly admission: RuntimeAdmissionOptions | undefined;
  readonly deadlineMs: number | undefined;
  readonly idleTimeout: number | undefined;
  readonly resourceLimits: ResourceLimits | undefined;
  readonly startTimeoutMs: number;
  /** The caller's threadEnds, its functions read once and guarded (see checkThreadEnds). */
  readonly threadEnds: ThreadEnds | undefined;
}

function bad(message: string): never {
  throw new InvalidArgumentError(message);
}

/**
 * A deadline in milliseconds: any number > 0. Infinity means none (undefined here), so that a
 * call may lift the runtime's default; delays beyond one setTimeout are honoured by
 * long-timeout.ts, never cut to the 1 ms Node gives them.
 */
export function checkDeadline(name: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !(value > 0))
    bad(`${name} must be a number > 0, got ${describeValue(value)}`);
  return value === Number.POSITIVE_INFINITY ? undefined : value;
}

export interface CheckedRunOptions {
  readonly cost: number;
  readonly signal: AbortSignal | undefined;
  /** The call's deadline, or the runtime's default; undefined for none. */
  readonly deadlineMs: number | undefined;
  readonly transfer: readonly ArrayBuffer[];
}

/** What a run() without options means; a runtime builds it once (dispatch allocates enough). */
export function defaultRunOptions(defaultDeadlineMs: number | undefined): CheckedRunOptions {
  return Object.freeze({ cost: 1, signal: undefined, deadlineMs: defaultDeadlineMs, transfer: NO_TRANSFER });
}

/**
 * run()'s options, checked before anything is admitted: a malformed option must fail while
 * no capacity is held (a throw after admission would strand the claim).
 * `cost` is left to the admission, which refuses it with OMNI_ERR_INVALID_COST.
 */
export function checkRunOptions(options: unknown, defaultDeadlineMs: number | undefined): CheckedRunOptions {
  if (options === undefined) return defaultRunOptions(defaultDeadlineMs);
  if (typeof options !== 'object' || options === null)
    bad(`run options must be an object, got ${describeValue(options)}`);
  checkCallKeys('run options', options, RUN_KEYS);
  const { cost, signal, deadlineMs, transfer } = options as RunOptions;
  if (signal !== undefined && !isAbortSignal(signal))
    bad(`signal must be an AbortSignal (a Proxy of one is refused), got ${describeValue(signal)}`);
  return {
    cost: cost === undefined ? 1 : cost, // null is a mistake like any other non-number (OMNI_ERR_INVALID_COST)
    signal,
    deadlineMs: deadlineMs === undefined ? defaultDeadlineMs : checkDeadline('deadlineMs', deadlineMs),
    transfer: checkTransfer(transfer),
  };
}

/** Schemes a worker thread can load a module from (Node's loader in a worker: file and data). */
const WORKER_SCHEMES = new Set(['file:', 'data:']);
/** The same two schemes in any case. */
const LOADABLE_SCHEME = /^(?:file|data):/i;
/** A string that names a URL by its scheme and authority, not a relative path (`https://…`). */
const URL_WITH_AUTHORITY = /^[a-z][a-z\d+.-]+:\/\//i;

/**
 * Any other scheme would be refused by Node's loader only inside the threads, after they start,
 * and `https://…` taken as a path would resolve under the working directory: both are refused here.
 */
function moduleUrlOf(worker: unknown): string {
  if (worker instanceof URL) return loadableUrl(...hrefAndProtocol(worker));
  if (typeof worker !== 'string' || worker === '')
    bad('worker must be a module path, or a file: or data: URL');
  // A scheme is case-insensitive: 'DATA:…' was taken as a path under the working directory, and
  // failed ERR_MODULE_NOT_FOUND in the threads. The parser gives it back lower-cased. One that
  // does not parse failed only in the threads (ERR_INVALID_URL): refused here.
  if (LOADABLE_SCHEME.test(worker)) {
    if (!URL.canParse(worker)) bad(`worker ${JSON.stringify(worker)} is not a valid URL`);
    return worker.startsWith('file:') || worker.startsWith('data:') ? worker : new URL(worker).href;
  }
  if (URL_WITH_AUTHORITY.test(worker)) {
    if (!URL.canParse(worker)) bad(`worker ${JSON.stringify(worker)} is not a valid URL`);
    const url = new URL(worker);
    return loadableUrl(url.href, url.protocol);
  }
  return pathToFileURL(isAbsolute(worker) ? worker : resolve(worker)).href;
}

/**
 * By internal slot, then parsed again: a URL's own `href` or `protocol` are the caller's (an own
 * `protocol` of 'file:' passed an https: URL to the threads' loader), and one only inheriting
 * URL.prototype threw an uncoded TypeError as it was read.
 */
function hrefAndProtocol(worker: URL): [href: string, protocol: string] {
  let href: string;
  try {
    href = urlHref.call(worker);
  } catch {
    bad('worker must be a module path, or a file: or data: URL');
  }
  const url = new URL(href);
  return [url.href, url.protocol];
}

const urlHref = Object.getOwnPropertyDescriptor(URL.prototype, 'href')!.get as (this: URL) => string;

function loadableUrl(href: string, protocol: string): string {
  if (!WORKER_SCHEMES.has(protocol)) {
    bad(`worker must be a module path, or a file: or data: URL; a thread cannot load a ${protocol} URL`);
  }
  return href;
}

function checkInteger(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    bad(`${name} must be an integer from ${min} to ${max}, got ${describeValue(value)}`);
  }
  return value;
}

const RESOURCE_LIMIT_KEYS: OptionKeys<ResourceLimits> = {
  maxYoungGenerationSizeMb: true,
  maxOldGenerationSizeMb: true,
  codeRangeSizeMb: true,
  stackSizeMb: true,
};

/**
 * Every limit's ceiling, in MB (1 TiB): above it Node killed the whole process, not the thread
 * (a codeRangeSizeMb of 1e8, MB given as bytes, failed to reserve its range: "Fatal process
 * OOM"; a stackSizeMb of 2^53 overflowed, and the thread's bootstrap aborted the process).
 */
export const MAX_RESOURCE_LIMIT_MB = 2 ** 20;

/**
 * The least stack a thread is started with, in MB: below ~0.25 MB Node's bootstrap ran out of
 * stack and aborted the whole process (V8 keeps 192 KiB of the stack in reserve); Node's
 * default is 4.
 */
export const MIN_STACK_SIZE_MB = 1;

/**
 * The least old generation a thread is started with, in MB: below ~2.5 MB Node 24, 26 and 22 from
 * 22.18 (not 22.12, nor 23.0; measured) abort the whole process as they make the thread's heap
 * (V8's "Fatal JavaScript out of memory: GC during deserialization", SIGTRAP), where Node 20 ended
 * the thread (ERR_WORKER_OUT_OF_MEMORY, as every Node still does from here to ~8 MB: a heap too
 * small to start a thread).
 */
export const MIN_OLD_GENERATION_SIZE_MB = 4;

/** The least each limit may be, in MB; the others need only be > 0. */
const LEAST_MB: Readonly<Record<string, number>> = {
  stackSizeMb: MIN_STACK_SIZE_MB,
  maxOldGenerationSizeMb: MIN_OLD_GENERATION_SIZE_MB,
};

/**
 * Node ignores a misspelt or non-numeric limit without a word: the thread would run unlimited.
 * Each limit is read once, inherited ones too (as Node reads them), into the plain object the
 * threads are given: Node reads the caller's object again for every thread it starts, and a
 * getter that answered a number to this check and anything else to Node lifted the limit.
 */
function checkResourceLimits(limits: unknown): ResourceLimits | undefined {
  if (limits === undefined) return undefined;
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) {
    bad(`resourceLimits must be an object, got ${describeValue(limits)}`);
  }
  checkOptionKeys('resourceLimits', limits, RESOURCE_LIMIT_KEYS);
  const checked: Record<string, number> = {};
  for (const key of Object.keys(RESOURCE_LIMIT_KEYS)) {
    const value: unknown = (limits as Record<string, unknown>)[key];
    if (value === undefined) continue;
    // NaN fails every comparison, Infinity the ceiling.
    const floor = LEAST_MB[key];
    if (
      !(
        typeof value === 'number' &&
        (floor === undefined ? value > 0 : value >= floor) &&
        value <= MAX_RESOURCE_LIMIT_MB
      )
    ) {
      const least = floor === undefined ? '> 0' : `${floor} or more`;
      bad(
        `resourceLimits.${key} must be a number of MB, ${least} and at most ${MAX_RESOURCE_LIMIT_MB}, got ${describeValue(value)}`,
      );
    }
    checked[key] = value;
  }
  return checked as ResourceLimits;
}

/**
 * The workerData every thread's init gets, taken once at start: piscina clones it again for each
 * thread it starts, a lost thread's replacement included, so the caller's own object would hand
 * a replacement whatever it holds by then (a buffer since transferred elsewhere made that clone
 * throw, uncaught, in the main thread). A SharedArrayBuffer inside stays shared. Whatever the
 * clone throws is the caller's value failing to post: refused by structured clone, or its own
 * code (a getter) throwing as the clone reads it; that is the error's cause.
 */
function snapshot(workerData: unknown): unknown {
  try {
    return structuredClone(workerData);
  } catch (err) {
    throw new InvalidArgumentError(`workerData cannot be posted to a worker thread: ${describeThrown(err)}`, {
      cause: err,
    });
  }
}

/**
 * The admission option's fields, each read once into a plain object: the checks (the claim-slot
 * limit, checkBounds) and the runtime's own admission then see the same values, where the
 * caller's object read again could answer otherwise (a getter for `requests` passed the limit
 * and then gave the runtime more requests than it has claim slots).
 */
function admissionOf(admission: unknown): RuntimeAdmissionOptions | undefined {
  if (admission === undefined) return undefined;
  if (typeof admission !== 'object' || admission === null) {
    bad(`admission must be an object { requests, units?, wait? }, got ${describeValue(admission)}`);
  }
  checkOptionKeys('admission', admission, RUNTIME_ADMISSION_KEYS);
  const { requests, units, wait } = admission as RuntimeAdmissionOptions;
  if (wait !== undefined && typeof wait !== 'boolean')
    bad(`admission.wait must be a boolean, got ${describeValue(wait)}`);
  return { requests, units, wait };
}

export function checkRuntimeOptions(options: RuntimeOptions): CheckedRuntimeOptions {
  if (typeof options !== 'object' || options === null) bad('Runtime.start needs an options object');
  checkOptionKeys('Runtime.start options', options, RUNTIME_KEYS);
  const admission = admissionOf(options.admission);
  // Each read once, as every other option: a getter read again could answer otherwise than what
  // was checked (a startTimeoutMs that answered 1000, then undefined, was taken for no limit).
  const { threads, idleTimeout, startTimeoutMs } = options;
  const checked: Omit<CheckedRuntimeOptions, 'workerData'> = {
    moduleUrl: moduleUrlOf(options.worker),
    // Only undefined takes the default: null is a mistake, as a null inFeatures or seed is.
    threads: checkInteger('threads', threads === undefined ? 1 : threads, 1, 256),
    admission,
    deadlineMs: checkDeadline('deadlineMs', options.deadlineMs),
    // piscina's: Infinity too (the pool's own default here), as piscina takes it.
    idleTimeout:
      idleTimeout === undefined || idleTimeout === Number.POSITIVE_INFINITY
        ? undefined
        : checkInteger('idleTimeout', idleTimeout, 0, 2 ** 31 - 1),
    resourceLimits: checkResourceLimits(options.resourceLimits),
    // Any length, as every other timeout: its timers are long-timeout.ts's (Infinity: none).
    startTimeoutMs:
      startTimeoutMs === undefined
        ? 30_000
        : (checkDeadline('startTimeoutMs', startTimeoutMs) ?? Number.POSITIVE_INFINITY),
    threadEnds: checkThreadEnds(options.threadEnds),
  };
  // The bound last, as the runtime's constructor checked it: here, so that a caller that checks
  // its options before costly work (LinearRuntime.start, before loading a library and making
  // weights) finds a bound above the runtime's claim slots then too, not in Runtime.start. The
  // slot limit is checkBounds' own maximum, so a refusal names the range a runtime takes.
  if (admission !== undefined) checkBounds(admission, RUNTIME_ADMISSION_KEYS, MAX_CLAIM_SLOTS);
  // Cloned last, once every option has passed: a mistake costs no clone of a large workerData,
  // and a bound's mistake stays OMNI_ERR_INVALID_BOUND beside one that cannot be cloned.
  return { ...checked, workerData: snapshot(options.workerData) };
}

/** Runtime.close()'s options; an unknown key or a bad timeout: OMNI_ERR_INVALID_ARGUMENT. */
export interface CloseOptions {
  /**
   * After this many milliseconds (a number >= 0; 0: at once), in-flight work is abandoned:
   * threads are terminated (default, or Infinity: wait). A thread inside a native call stops,
   * and close() resolves, only once that call returns.
   */
  timeoutMs?: number | undefined;
}

export const CLOSE_KEYS: OptionKeys<CloseOptions> = { timeoutMs: true };

/** close()'s timeout: 0 abandons in-flight work at once; any length is honoured (Infinity: none). */
export function checkCloseOptions(options: unknown): number | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null)
    bad(`close options must be an object, got ${describeValue(options)}`);
  checkOptionKeys('close options', options, CLOSE_KEYS);
  const value = (options as { timeoutMs?: unknown }).timeoutMs;
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !(value >= 0))
    bad(`timeoutMs must be a number >= 0, got ${describeValue(value)}`);
  return value === Number.POSITIVE_INFINITY ? undefined : value;
}

const NO_TRANSFER: readonly ArrayBuffer[] = Object.freeze([]);

export function checkTransfer(transfer: unknown): readonly ArrayBuffer[] {
  if (transfer === undefined) return NO_TRANSFER;
  if (!Array.isArray(transfer)) bad('transfer must be an array of ArrayBuffers');
  // A copy, read once here: the task is built (after admission) and posted (once a thread is
  // free) later, and the caller's array may change by then; the list checked, the list the
  // envelope checks at the post and the list piscina moves must be the one given to run().
  const list: unknown[] = [...transfer];
  // What the value is, not its prototype chain: an ArrayBuffer from another realm (a vm context,
  // a test sandbox) moves as any other, and an object that only inherits ArrayBuffer.prototype
  // would be admitted and then fail its post.
  if (!list.every(isArrayBuffer)) bad('transfer must be an array of ArrayBuffers');
  return eachOnce(list as ArrayBuffer[]);
}

/** Up to this many buffers the list is searched for repeats (no set made), as ctx.transfer does. */
const SEARCHED_LIST = 16;

/**
 * Each buffer once, in order: a post refuses a list that names one twice, which failed the call
 * after it was admitted (counted failed, not invalid), where ctx.transfer and a move()'s own list
 * take a repeat as harmless. The list itself when it has none, as nearly every call's: on the
 * dispatch path, a short one is searched in place and nothing is allocated.
 */
function eachOnce(list: ArrayBuffer[]): ArrayBuffer[] {
  if (list.length > SEARCHED_LIST) {
    const once = new Set(list);
    return once.size === list.length ? list : [...once];
  }
  for (let i = 1; i < list.length; i++) {
    if (list.lastIndexOf(list[i]!, i - 1) !== -1) return list.filter((b, j) => list.indexOf(b) === j);
  }
  return list;
}
