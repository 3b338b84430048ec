import { types } from 'node:util';
import {
  type AbortFollower,
  followAbort,
  isAbortSignal,
  signalAborted,
  unfollowAbort,
} from '../abort-signal.js';
import { describeValue, InvalidArgumentError, TooLargeError, UnavailableError } from '../errors.js';
import { type BackendName, MAX_ROWS, type NativeStats, selectBackend } from '../native/index.js';
import type { OwnFloat32Array } from '../native/output.js';
import { kindOf, lengthOf } from '../native/validate.js';
import { checkCallKeys, type OptionKeys } from '../option-keys.js';
import { checkTransfer, RUN_KEYS, type RunOptions, type RuntimeOptions } from '../runtime/options.js';
import {
  type CloseOptions,
  type CloseResult,
  kEndedEarly,
  kRunFoundReady,
  Runtime,
  type RuntimeReport,
} from '../runtime.js';
import { ContextReclaim } from './context-reclaim.js';
import type { NativeWorkerData, NativeWorkerInput } from './protocol.js';
import { rowsCopy, sendsRowsCopy } from './sent-rows.js';
import { checkLinearOptions, type LinearRuntimeOptions } from './start-options.js';
import { seededWeights, sharedCopy } from './weights.js';

/** A held follow's follower: the call's own follow hears the abort. */
const noop = (): void => {};

/**
 * @internal For a front that learns a call's row count before its input (the HTTP rows hint):
 * `lr[kRowsRefusal](rows)` is undefined while a call of `rows` rows at its default cost might
 * be served, else a function that refuses it as run() would, counted as run() counts it.
 */
export const kRowsRefusal = Symbol('omni.linear.rowsRefusal');

/** LinearRuntime.run()'s options: Runtime.run()'s plus `rows`. */
export interface LinearRunOptions extends RunOptions {
  /** Rows in x (default x.length / inFeatures). Cost defaults to rows. */
  readonly rows?: number | undefined;
}

const LINEAR_RUN_KEYS: OptionKeys<LinearRunOptions> = { ...RUN_KEYS, rows: true };

/**
 * A Runtime running the built-in native worker: a fused linear layer, y = GELU(x W^T + b), on
 * the CPU fixture or CUDA. The backend is chosen once on the main thread (so it can say which
 * it chose) and every worker thread opens its own context on it.
 */
export class LinearRuntime {
  /** The Runtime it runs on: its state, failure, whenFailed() and report(). */
  readonly runtime: Runtime;
  /** The backend every thread runs: 'fixture' (CPU) or 'cuda'. */
  readonly backend: BackendName;
  /** Why this backend: requested, from OMNI_BACKEND, or what auto found. */
  readonly backendReason: string;
  /** Absolute path of the native library every thread loaded (null around another worker). */
  readonly libraryPath: string | null;
  /** The layer's input width: each row of x has this many floats. */
  readonly inFeatures: number;
  /** The layer's output width: each row of a result has this many floats. */
  readonly outFeatures: number;
  /**
   * The most rows one call takes: MAX_ROWS, or fewer when the workspace byte limit cannot hold
   * that many (each row needs 8 x (inFeatures + outFeatures) bytes of scratch).
   */
  readonly maxRows: number;
  /** The admission's unit ceiling (null: none), read once when first needed: it never changes. */
  #unitCeiling: number | null | undefined;

  constructor(
    runtime: Runtime,
    shape: {
      inFeatures: number;
      outFeatures: number;
      backend: BackendName;
      reason?: string;
      libraryPath?: string;
      maxRows?: number;
    },
  ) {
    this.runtime = runtime;
    this.libraryPath = shape.libraryPath ?? null;
    this.inFeatures = shape.inFeatures;
    this.outFeatures = shape.outFeatures;
    this.maxRows = shape.maxRows ?? MAX_ROWS;
    this.backend = shape.backend;
    this.backendReason = shape.reason ?? 'given';
  }

  /** run()'s default deadline in milliseconds (the runtime's); undefined when there is none. */
  get deadlineMs(): number | undefined {
    return this.runtime.deadlineMs;
  }

  /**
   * Checks every option, chooses the backend, makes (or checks) the weights and starts the
   * threads, each opening its own native context. Rejects with the options' error before
   * anything loads, OMNI_ERR_LIBRARY_NOT_FOUND / _ABI_MISMATCH for a library, or a thread's
   * start error.
   */
  static async start(options: LinearRuntimeOptions = {}): Promise<LinearRuntime> {
    // Every option first (start-options.ts), before a library is loaded or weights are made.
    const checked = checkLinearOptions(options);
    const { inFeatures, outFeatures, selection } = checked;
    const choice = selectBackend(checked.preference, process.env, selection);
    const weights = sharedCopy(checked.weights ?? seededWeights(inFeatures, outFeatures, checked.seed));
    // checkLinearOptions has checked threads (Runtime.start's default is 1).
    const reclaim = ContextReclaim.forThreads(checked.runtime.threads ?? 1, choice.library);
    const data: NativeWorkerData = {
      backend: choice.backend,
      libraryPath: choice.library.path,
      device: selection.device,
      weights,
      workspaceCount: checked.workspaceCount,
      workspaceBytes: checked.workspaceBytes,
      faultInjection: checked.faultInjection,
      contexts: reclaim.ledger.buffer,
    };
    const started: RuntimeOptions = {
      ...checked.runtime,
      worker: checked.worker,
      workerData: data,
      threadEnds: reclaim,
    };
    const runtime = await Runtime.start(started);
    return new LinearRuntime(runtime, {
      inFeatures,
      outFeatures,
      backend: choice.backend,
      reason: choice.reason,
      libraryPath: choice.library.path,
      maxRows: checked.maxRows,
    });
  }

  /**
   * Runs `rows` rows of x (row-major, inFeatures wide) and resolves with rows x outFeatures, in
   * an array over a buffer of its own (which a later call's `transfer` can list). The cost
   * defaults to rows. Checked before admission, so a mistake holds no capacity: more rows than
   * one native call takes (`maxRows`) is OMNI_ERR_TOO_LARGE (it can never be served), any other
   * malformed argument OMNI_ERR_INVALID_ARGUMENT. A runtime that is not ready comes
   * first, as in Runtime.run: every call is then OMNI_ERR_UNAVAILABLE, whatever its arguments.
   * Found ready, a call that its own code then closes (an option's getter) is told as
   * Runtime.run tells it: its mistake, else OMNI_ERR_UNAVAILABLE.
   */
  run(x: Float32Array, options?: LinearRunOptions): Promise<OwnFloat32Array> {
    const state = this.runtime.state;
    if (state !== 'ready') return this.runtime[kEndedEarly]('unavailable', new UnavailableError(state));
    if (options !== undefined && (typeof options !== 'object' || options === null)) {
      return this.runtime[kEndedEarly](
        'invalid',
        new InvalidArgumentError(`run options must be an object, got ${describeValue(options)}`),
      );
    }
    if (!types.isFloat32Array(x))
      return this.runtime[kEndedEarly](
        'invalid',
        new InvalidArgumentError(`x must be a Float32Array, got ${kindOf(x)}`),
      );
    let givenRows: LinearRunOptions['rows'];
    let cost: LinearRunOptions['cost'];
    let signal: LinearRunOptions['signal'];
    let deadlineMs: LinearRunOptions['deadlineMs'];
    let transfer: LinearRunOptions['transfer'];
    try {
      // Each option read once, here, as Runtime.run reads them: inherited properties included
      // (a spread would keep only own ones and silently drop an inherited signal, deadline or
      // transfer list), and a getter that throws ends the call with its error, never run().
      // Into locals, not an object: this is every call's path. A misspelt key is refused first,
      // as a set-up option's is, rather than read as absent (a proxy's ownKeys trap may throw).
      if (options !== undefined) {
        checkCallKeys('run options', options, LINEAR_RUN_KEYS);
        ({ rows: givenRows, cost, signal, deadlineMs, transfer } = options);
      }
    } catch (err) {
      return this.runtime[kEndedEarly]('invalid', err);
    }
    let list: readonly ArrayBuffer[] | undefined;
    try {
      // The caller's list read once, here: the copy is decided on the list that then moves. Read
      // again by run(), a list whose answers change per read moved x's whole buffer after paying
      // for its rows' copy, or cloned the whole buffer it had said it moved. run() copies this
      // snapshot again, which is ours and reads the same. Read before x is measured: reading it
      // may run the caller's code (an element's getter, an iterator), and x resized or detached
      // by it was sent as it was then, to fail after admission.
      if (transfer !== undefined) list = checkTransfer(transfer);
    } catch (err) {
      // Not an array of ArrayBuffers, or it threw as it was read: as an option's getter does.
      return this.runtime[kEndedEarly]('invalid', err);
    }
    // Following the signal runs the caller's code too (Node's addEventListener reads its own
    // `constructor`), at the dispatch, after x was measured. Followed here first and held until
    // the call ends, the dispatch's follow finds it followed and adds no listener, so x is
    // measured after the last caller code. One that is no signal is left to run()'s check; one
    // that has aborted to run()'s rejection, which follows nothing: followed here, its listener
    // was added after its one event and stayed on it for good, never told or taken off.
    if (signal === undefined || !isAbortSignal(signal) || signalAborted(signal)) {
      return this.#measured(x, givenRows, cost, signal, deadlineMs, list);
    }
    const held: AbortFollower = { handleEvent: noop };
    try {
      followAbort(signal, held);
    } catch (err) {
      // A signal that takes no listener: refused by every follow, run()'s too, before admission.
      return this.runtime[kEndedEarly]('invalid', err);
    }
    const called = this.#measured(x, givenRows, cost, signal, deadlineMs, list);
    // In a finally, as Runtime.run lets go of its own: a dropped failed call is still heard.
    return called.finally(() => unfollowAbort(signal, held));
  }

  /** run() once every option has been read and the signal followed: x is measured here. */
  #measured(
    x: Float32Array,
    givenRows: LinearRunOptions['rows'],
    cost: LinearRunOptions['cost'],
    signal: LinearRunOptions['signal'],
    deadlineMs: LinearRunOptions['deadlineMs'],
    list: readonly ArrayBuffer[] | undefined,
  ): Promise<OwnFloat32Array> {
    const length = lengthOf(x);
    // Only undefined means "from x": a null rows is a mistake like a null cost, not the default.
    const rows = givenRows === undefined ? length / this.inFeatures : givenRows;
    if (!Number.isInteger(rows) || rows < 1) {
      return this.runtime[kEndedEarly](
        'invalid',
        new InvalidArgumentError(
          givenRows === undefined
            ? `x holds ${length} floats: not a whole number (>= 1) of ${this.inFeatures}-wide rows`
            : `rows must be an integer >= 1, got ${describeValue(givenRows)}`,
        ),
      );
    }
    if (length !== rows * this.inFeatures) {
      // Found here, not by the native call after admission: a mistake holds no capacity.
      return this.runtime[kEndedEarly](
        'invalid',
        new InvalidArgumentError(`x holds ${length} floats, not rows (${rows}) x ${this.inFeatures}`),
      );
    }
    if (rows > this.maxRows) return this.#tooManyRows(rows);
    let sent = x;
    if (sendsRowsCopy(x, list)) {
      sent = rowsCopy(x);
      list ??= [sent.buffer as ArrayBuffer]; // the copy is this call's alone: moved, not cloned
    }
    const input: NativeWorkerInput = { x: sent, rows };
    // Past run()'s state check: run() above made it before any caller code ran (see the method).
    return this.runtime[kRunFoundReady]<OwnFloat32Array>(input, {
      cost: cost === undefined ? rows : cost,
      signal,
      deadlineMs,
      transfer: list,
    });
  }

  /** Like a cost above the unit ceiling: it can never fit, so it counts as a refusal. */
  #tooManyRows(rows: number): Promise<never> {
    return this.runtime[kEndedEarly](
      'refused',
      new TooLargeError(rows, this.maxRows, `${rows} rows exceed the ${this.maxRows} one call takes`),
    );
  }

  /** See kRowsRefusal. A runtime that is not ready is left to run(), which refuses every call. */
  [kRowsRefusal](rows: number): (() => Promise<never>) | undefined {
    if (this.runtime.state !== 'ready') return undefined;
    if (rows > this.maxRows) return () => this.#tooManyRows(rows);
    if (this.#unitCeiling === undefined) this.#unitCeiling = this.runtime.report().unitCapacity;
    const ceiling = this.#unitCeiling;
    // The runtime's own refusal of that cost (its ceiling never changes), so that it counts it
    // as any other: in its outcomes and in its admission's `rejected`. No input is ever sent.
    if (ceiling !== null && rows > ceiling) return () => this.runtime.run<never>(undefined, { cost: rows });
    return undefined;
  }

  /**
   * The native context's counters from one worker thread. It is a call like any other: admitted
   * at cost 1 (so refused while the runtime is full) and counted in report().
   */
  stats(): Promise<NativeStats> {
    return this.runtime.run<NativeStats>({ stats: true } satisfies NativeWorkerInput);
  }

  /** The runtime's report (see Runtime.report). */
  report(): RuntimeReport {
    return this.runtime.report();
  }

  /**
   * Closes the runtime (see Runtime.close). Every thread's native context is closed: by its
   * close hook, or by the main thread for a thread that ended without it.
   */
  close(options?: CloseOptions): Promise<CloseResult> {
    return this.runtime.close(options);
  }
}
