/**
 * Prometheus metrics for one server, in a Registry of its own (never prom-client's global one,
 * so two servers in one process, or a test's servers, never mix their numbers).
 *
 * Runtime figures (depth, capacity, units, state, outcomes, piscina latency summaries) are read
 * from `report()` when scraped; HTTP figures (latency histogram, refusals by reason, in-flight)
 * are recorded by the server as requests end.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { describeValue, InvalidArgumentError } from '../errors.js';
import type { RuntimeReport } from '../runtime.js';
import { count, figure, reportOf, stateOf, summaryOf } from './metric-figures.js';

const STATES = ['starting', 'ready', 'draining', 'stopped', 'failed'] as const;
const OUTCOMES = ['completed', 'failed', 'aborted', 'deadline', 'refused', 'invalid', 'unavailable'] as const;

/**
 * The latency histogram's status for a request the server cut off before its answer was out (a
 * client stalled mid-upload or not reading its answer, a call still running at the drain's
 * timeout; the drain or the send timeout closed the connection; a request queued behind an
 * answer that closed it): nginx's 444, "closed without a response", beside its 499 for a client
 * that left. It is never sent.
 */
export const CUT_OFF_STATUS = 444;

/** Seconds; from well under a millisecond (a refusal) to a long native batch. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What ServeMetrics reads at each scrape; its functions are read once, at construction. */
export interface MetricsSource {
  /** The runtime's report, with `state` as the server presents it (draining once it drains). */
  report(): RuntimeReport;
  /** HTTP requests being answered now. */
  inflight(): number;
  /**
   * Connections the server holds open now (omni_http_connections; without it, no such series):
   * those with no request in flight too (a head still arriving, idle, lingering).
   */
  connections?(): number;
}

/** A gauge whose value is read at scrape time; unbounded (null) reads as +Inf. */
function readGauge(registry: Registry, name: string, help: string, read: () => unknown): Gauge {
  return new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      const value = read();
      this.set(value === null ? Number.POSITIVE_INFINITY : figure(name, value));
    },
  });
}

/**
 * One server's Prometheus metrics (the series docs/http.md lists), in a registry of
 * its own. The constructor throws OMNI_ERR_INVALID_ARGUMENT for a source without `report` and
 * `inflight` functions.
 */
export class ServeMetrics {
  /** prom-client's registry holding this server's series (not the global one). */
  readonly registry = new Registry();
  readonly #latency: Histogram<'route' | 'method' | 'status'>;
  readonly #refused: Counter<'reason' | 'status'>;
  readonly #clientErrors: Counter<'detail'>;
  /** The source's report(), read once at construction. */
  readonly #report: () => RuntimeReport;
  /** The one report a scrape reads: its gauges then describe one moment, not a dozen. */
  #snapshot: RuntimeReport | undefined;

  constructor(source: MetricsSource) {
    // Checked here: taken as it is, a wrong source failed every scrape with an uncoded TypeError.
    const given = source as Partial<Record<keyof MetricsSource, unknown>> | null;
    if (typeof given !== 'object' || given === null) throw notASource(source);
    // Each read once and called as the source's method: read again at every scrape, a getter
    // could answer a function to this check and anything else to a scrape.
    const { report, inflight, connections } = given;
    if (typeof report !== 'function' || typeof inflight !== 'function') throw notASource(source);
    if (connections !== undefined && typeof connections !== 'function') {
      throw new InvalidArgumentError(
        `ServeMetrics' source connections must be a function, got ${describeValue(connections)}`,
      );
    }
    const registry = this.registry;
    this.#report = () => reportOf(Reflect.apply(report, source, []));
    const take = (): RuntimeReport => this.#snapshot ?? this.#report();
    readGauge(
      registry,
      'omni_runtime_depth',
      'Calls admitted and not yet ended (the work decides).',
      () => take().depth,
    );
    readGauge(
      registry,
      'omni_runtime_capacity',
      'The request bound (+Inf when unbounded).',
      () => take().capacity,
    );
    readGauge(
      registry,
      'omni_runtime_units',
      'Units held by outstanding calls (0 without a unit ceiling).',
      () => take().units,
    );
    readGauge(
      registry,
      'omni_runtime_unit_capacity',
      'The unit ceiling (+Inf when none).',
      () => take().unitCapacity,
    );
    readGauge(registry, 'omni_runtime_waiting', 'Callers waiting for admission.', () => take().waiting);
    readGauge(
      registry,
      'omni_runtime_queued',
      'Dispatched and not yet started by a worker.',
      () => take().queued,
    );
    readGauge(registry, 'omni_runtime_running', 'Running in a worker now.', () => take().running);
    readGauge(
      registry,
      'omni_http_inflight',
      'HTTP requests being answered now (until their answer is out, or their connection closed).',
      () => Reflect.apply(inflight, source, []),
    );
    if (connections !== undefined) {
      readGauge(
        registry,
        'omni_http_connections',
        'Connections the server holds open (a request in flight or not: a head still arriving, idle, lingering after a closing answer).',
        () => Reflect.apply(connections, source, []),
      );
    }
    new Gauge({
      name: 'omni_runtime_state',
      help: 'The state the server reports: 1 for the current one, 0 for the others.',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        const current = stateOf(take().state);
        for (const state of STATES) this.set({ state }, state === current ? 1 : 0);
      },
    });
    new Counter({
      name: 'omni_runtime_rejected_total',
      help: 'Admission refusals counted by the runtime (including waits that timed out).',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(count('omni_runtime_rejected_total', take().rejected));
      },
    });
    new Counter({
      name: 'omni_runtime_calls_total',
      help: 'How runtime calls ended, as their callers saw it.',
      labelNames: ['outcome'],
      registers: [registry],
      collect() {
        const report = take();
        this.reset();
        for (const outcome of OUTCOMES) {
          this.inc({ outcome }, count(`omni_runtime_calls_total{outcome="${outcome}"}`, report[outcome]));
        }
      },
    });
    for (const [name, pick] of [
      ['omni_runtime_run_time_ms', (r: RuntimeReport) => r.runTimeMs],
      ['omni_runtime_wait_time_ms', (r: RuntimeReport) => r.waitTimeMs],
    ] as const) {
      new Gauge({
        name,
        help: `piscina's ${name.includes('run_time') ? 'run' : 'queue wait'} time of the runtime's calls over its life, in milliseconds (quantile 1 = max; its own start-up and close rounds are not calls).`,
        labelNames: ['quantile'],
        registers: [registry],
        collect() {
          const summary = summaryOf(name, pick(take()));
          this.set({ quantile: '0.5' }, figure(`${name}{quantile="0.5"}`, summary.p50));
          this.set({ quantile: '0.99' }, figure(`${name}{quantile="0.99"}`, summary.p99));
          this.set({ quantile: '1' }, figure(`${name}{quantile="1"}`, summary.max));
        },
      });
    }
    this.#latency = new Histogram({
      name: 'omni_http_request_duration_seconds',
      help: `Time from request to answer, by route, method and status (never sent: 499, the client left unanswered; ${CUT_OFF_STATUS}, the server (its drain, its send timeout, or a closing answer ahead of it) cut it off before the answer was out).`,
      labelNames: ['route', 'method', 'status'],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    });
    this.#refused = new Counter({
      name: 'omni_http_refused_total',
      help: 'Requests refused (413 or 503) without running, by reason (requests, units, queued, too-large, body-too-large, unavailable), counted when refused, as the runtime counts its refusals: one whose client left before its answer too (the latency histogram records that 499 or 444). A call the drain abandoned while it ran is no refusal, nor one whose malformed body was answered 400 before it.',
      labelNames: ['reason', 'status'],
      registers: [registry],
    });
    this.#clientErrors = new Counter({
      name: 'omni_http_client_errors_total',
      help: "Answers given outside the routes, then closed: malformed HTTP (400, 408 or 431, by parser code; HPE_INVALID_EOF_STATE: the client's FIN mid-request), an unsupported Expect (EXPECTATION_FAILED, 417), a CONNECT (CONNECT, 501). Counted once the answer is out (handed to the kernel): not when the client left, an answer before it closed the connection, or the drain or send timeout cut it off, first. One to a request whose head was whole (a routed body that failed, a 417) is in the latency histogram too.",
      labelNames: ['detail'],
      registers: [registry],
    });
  }

  /** One answered request. */
  observe(route: string, method: string, status: number, seconds: number): void {
    this.#latency.observe({ route, method, status: String(status) }, seconds);
  }

  /** A request refused without running (413 or 503). */
  refused(reason: string, status: number): void {
    this.#refused.inc({ reason, status: String(status) });
  }

  /** An answer given outside the routes (omni_http_client_errors_total), by its detail. */
  clientError(detail: string): void {
    this.#clientErrors.inc({ detail });
  }

  /** The Prometheus text exposition and its content type. */
  async scrape(): Promise<{ contentType: string; text: string }> {
    this.#snapshot = this.#report();
    try {
      return { contentType: this.registry.contentType, text: await this.registry.metrics() };
    } finally {
      this.#snapshot = undefined;
    }
  }
}

function notASource(source: unknown): InvalidArgumentError {
  return new InvalidArgumentError(
    `ServeMetrics needs a source { report(), inflight() }, got ${describeValue(source)}`,
  );
}
