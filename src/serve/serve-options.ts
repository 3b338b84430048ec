/**
 * serve()'s options: their keys, defaults and ranges, and the reading of them into the Settings
 * one server is built from. Apart from the server because they are read once, all of them,
 * before anything listens: a bad one is refused with nothing to tear down, and a port-0 retry
 * (server.ts) builds its next server from the same Settings, never reading an option again.
 */
import { describeValue, InvalidArgumentError } from '../errors.js';
import { checkOptionKeys, type OptionKeys } from '../option-keys.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from './request-timeout.js';
import { DEFAULT_SEND_TIMEOUT_MS } from './send-timeout.js';
import type { Served, Widths } from './served.js';

/**
 * serve()'s options, each read once; an unknown key or a bad value rejects serve() with
 * OMNI_ERR_INVALID_ARGUMENT before anything listens.
 */
export interface ServeOptions {
  /** Interface to listen on (default 127.0.0.1: loopback only; 'localhost': each address it names). */
  readonly host?: string | undefined;
  /** Port, an integer 0..65535 (default 8080; 0 picks a free one, see ServeHandle.port). */
  readonly port?: number | undefined;
  /**
   * Largest request body in bytes, an integer 1..2^31 - 1 (default 8 MiB); larger ones are
   * answered 413.
   */
  readonly bodyLimit?: number | undefined;
  /**
   * Deadline for every call in milliseconds, > 0 (default: the runtime's own; Infinity: none, even
   * where the runtime has a default). A client's x-omni-deadline-ms may shorten it, never
   * lengthen it.
   */
  readonly deadlineMs?: number | undefined;
  /** Retry-After, in whole seconds 0..86,400, on a 503 for full capacity (default 1). */
  readonly retryAfterSeconds?: number | undefined;
  /**
   * How long a drain waits for in-flight work before abandoning it, in milliseconds >= 0
   * (default 10 s; 0: abandons it
   * at once, as Runtime.close's 0 does; Infinity: no limit).
   */
  readonly drainTimeoutMs?: number | undefined;
  /**
   * How long a request may take to arrive, from its first byte to its body's last, in
   * milliseconds > 0 (default 300 s; Infinity: no limit; node:http counts whole milliseconds, so
   * under 1 is 1); its headers get the lesser of this and 60 s. One later is answered 408 and its
   * connection closed. The work a request starts is not bounded by it.
   */
  readonly requestTimeoutMs?: number | undefined;
  /**
   * How long an answer, once written, may take to leave: a client that does not read it for
   * this long has its connection closed (milliseconds > 0; default 300 s; Infinity: no limit).
   */
  readonly sendTimeoutMs?: number | undefined;
  /** Close the runtime when the server drains (default true: the server owns it). */
  readonly closeRuntime?: boolean | undefined;
}

const SERVE_KEYS: OptionKeys<ServeOptions> = {
  host: true,
  port: true,
  bodyLimit: true,
  deadlineMs: true,
  retryAfterSeconds: true,
  drainTimeoutMs: true,
  requestTimeoutMs: true,
  sendTimeoutMs: true,
  closeRuntime: true,
};

/** ServeOptions.bodyLimit's default: 8 MiB, in bytes. */
export const DEFAULT_BODY_LIMIT = 8 * 1024 * 1024;
/** ServeOptions.drainTimeoutMs's default: 10 s, in milliseconds. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 10_000;

function integer(
  name: string,
  value: number | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(
      `${name} must be an integer from ${min} to ${max}, got ${describeValue(value)}`,
    );
  }
  return value;
}

/** A time option: any number > 0, as the runtime takes its timeouts (Infinity: none). */
function duration(name: string, value: number | undefined): number | undefined {
  if (value !== undefined && !(typeof value === 'number' && value > 0)) {
    throw new InvalidArgumentError(`${name} must be a number > 0, got ${describeValue(value)}`);
  }
  return value;
}

/**
 * A drain's timeout: any number >= 0, as Runtime.close takes its own (0: work still in flight
 * is abandoned at once; Infinity: none).
 */
export function drainTimeout(name: string, value: number | undefined): number | undefined {
  if (value !== undefined && !(typeof value === 'number' && value >= 0)) {
    throw new InvalidArgumentError(`${name} must be a number >= 0, got ${describeValue(value)}`);
  }
  return value;
}

/** What serve() read of its options, and of its runtime's shape: all one server is built from. */
export interface Settings {
  readonly host: string;
  readonly port: number;
  readonly bodyLimit: number;
  readonly retryAfter: number;
  readonly drainTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly sendTimeoutMs: number;
  readonly deadlineMs: number | undefined;
  readonly closeRuntime: boolean;
  readonly widths: Widths;
}

/**
 * Reads each option once, in this order, and checks it; rejects an unknown key or a bad value
 * with OMNI_ERR_INVALID_ARGUMENT. `runtime` is read only for its default deadline.
 */
export function serveSettings(runtime: Served, widths: Widths, options: ServeOptions): Settings {
  checkOptionKeys('serve options', options, SERVE_KEYS);
  // Only undefined takes the default, as for every other option: null is a mistake.
  const { host: givenHost } = options;
  const host = givenHost === undefined ? '127.0.0.1' : givenHost;
  if (typeof host !== 'string' || host === '') {
    throw new InvalidArgumentError(`host must be a non-empty string, got ${describeValue(host)}`);
  }
  const port = integer('port', options.port, 8080, 0, 65535);
  const bodyLimit = integer('bodyLimit', options.bodyLimit, DEFAULT_BODY_LIMIT, 1, 2 ** 31 - 1);
  const retryAfter = integer('retryAfterSeconds', options.retryAfterSeconds, 1, 0, 86_400);
  const drainTimeoutMs = drainTimeout('drainTimeoutMs', options.drainTimeoutMs) ?? DEFAULT_DRAIN_TIMEOUT_MS;
  const requestTimeoutMs =
    duration('requestTimeoutMs', options.requestTimeoutMs) ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const sendTimeoutMs = duration('sendTimeoutMs', options.sendTimeoutMs) ?? DEFAULT_SEND_TIMEOUT_MS;
  // The runtime's default is the ceiling too: a client's deadline replaces it in run().
  // Infinity means none, as for the runtime: kept as Infinity (not undefined) so that it lifts
  // a default the runtime has, and a client's deadline still shortens it.
  const deadlineMs = duration('deadlineMs', options.deadlineMs) ?? runtime.deadlineMs;
  // Read as `!== false`, a 0 or a 'false' from a config file would close the caller's runtime.
  // Read once: a getter could answer false to the check and 0 to the use.
  const closeRuntime: unknown = options.closeRuntime;
  if (closeRuntime !== undefined && typeof closeRuntime !== 'boolean') {
    throw new InvalidArgumentError(`closeRuntime must be a boolean, got ${describeValue(closeRuntime)}`);
  }
  return {
    host,
    port,
    bodyLimit,
    retryAfter,
    drainTimeoutMs,
    requestTimeoutMs,
    sendTimeoutMs,
    deadlineMs,
    closeRuntime: closeRuntime !== false,
    widths,
  };
}
