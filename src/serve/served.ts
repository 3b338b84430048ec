/**
 * The runtime a server serves: what serve() needs of a LinearRuntime, checked once before
 * anything listens. Apart from the options because the server, and each port-0 retry of it,
 * keeps what was checked here (the widths, and the methods bound to the runtime) rather than
 * the runtime itself, never reading it again.
 */
import { describeValue, InvalidArgumentError } from '../errors.js';
import { kRowsRefusal, type LinearRuntime } from '../linear/linear-runtime.js';
import { MAX_FEATURES } from '../native/abi.js';

/**
 * What the server needs of a LinearRuntime, and all it reads of one (serve() reads and checks
 * the five members once, and calls the methods it checked; tests wrap any Runtime in one). Its
 * `deadlineMs`, the default deadline of its calls, bounds what a client's deadline may ask for.
 */
export type Served = Pick<LinearRuntime, 'run' | 'report' | 'close' | 'inFeatures' | 'outFeatures'> &
  Partial<Pick<LinearRuntime, 'deadlineMs'>>;

/** The layer's shape, as serve() read and checked it once. */
export interface Widths {
  readonly inFeatures: number;
  readonly outFeatures: number;
}

/**
 * What serve() needs of its runtime, checked before anything listens: a server over something
 * else would answer every request with a 500 (and null met its first read as an uncoded TypeError).
 * Each member is read here once, and the server uses what was checked: the widths as read, and
 * the functions called as the runtime's methods. Read again per request, a getter could answer
 * otherwise than what was checked, and so could a method a later option's getter replaced:
 * every call, health check or drain then failed on a runtime that had passed.
 */
export function checkServed(runtime: Served): { served: Served; widths: Widths } {
  const r = runtime as Partial<Record<keyof Served, unknown>> | null;
  const width = (value: unknown): value is number =>
    typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_FEATURES;
  if (typeof r === 'object' && r !== null) {
    const { run, report, close, inFeatures, outFeatures } = r;
    if (
      typeof run === 'function' &&
      typeof report === 'function' &&
      typeof close === 'function' &&
      width(inFeatures) &&
      width(outFeatures)
    ) {
      const served: Served & Pick<LinearRuntime, typeof kRowsRefusal> = {
        run: (...args) => Reflect.apply(run, runtime, args),
        report: () => Reflect.apply(report, runtime, []),
        close: (...args) => Reflect.apply(close, runtime, args),
        inFeatures,
        outFeatures,
        // A LinearRuntime's own, found on it per request as before: absent on a test's wrapper.
        [kRowsRefusal]: (rows) => (runtime as Partial<LinearRuntime>)[kRowsRefusal]?.(rows),
      };
      return { served, widths: { inFeatures, outFeatures } };
    }
  }
  throw new InvalidArgumentError(
    `serve needs a LinearRuntime (run, report, close, inFeatures, outFeatures), got ${describeValue(runtime)}`,
  );
}
