/**
 * GET /health reads a `Served`'s report(): one that answers no report (a number, null, an object
 * without a state or with a figure that is no number, a Proxy whose traps throw) or throws is the
 * server's own failure, answered as GET /metrics answers it: 500 OMNI_ERR_INTERNAL. It was a 503
 * with body `{}` (or the fields it had), the documented not-ready answer, saying nothing of the
 * broken report; and a report() throwing a coded error was answered by that code (400 for
 * OMNI_ERR_INVALID_ARGUMENT, as if the probe had asked wrongly).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError, UnavailableError } from '../src/errors.js';
import type { RuntimeReport } from '../src/runtime/report.js';
import { type ServeHandle, serve } from '../src/serve/index.js';
import { reportingServed } from './fixtures/reporting-served.js';

function goodReport(state = 'ready'): RuntimeReport {
  const latency = { p50: 1, p99: 2, max: 3 };
  return {
    ...{ state, depth: 2, capacity: 8, rejected: 0, units: 2, unitCapacity: null },
    ...{ waiting: 0, leaked: 0, queued: 0, running: 2, waitTimeMs: latency, runTimeMs: latency },
    ...{ completed: 0, failed: 0, aborted: 0, deadline: 0, refused: 0, invalid: 0, unavailable: 0 },
  } as RuntimeReport;
}

const fail = (): never => {
  throw new Error('trap');
};

const GARBAGE: Array<[string, () => unknown]> = [
  ['a number', () => 5],
  ['null', () => null],
  ['undefined', () => undefined],
  ['an empty object', () => ({})],
  ['no state', () => ({ ...goodReport(), state: undefined })],
  ['a state that is no string', () => ({ ...goodReport(), state: 1 })],
  ['a depth given as a string', () => ({ ...goodReport(), depth: '2' })],
  ['no waiting count', () => ({ ...goodReport(), waiting: undefined })],
  ['a capacity that is an object', () => ({ ...goodReport(), capacity: {} })],
  ['a Proxy whose traps throw', () => new Proxy({}, { get: fail, has: fail, ownKeys: fail })],
  [
    'a throwing state getter',
    () => ({
      ...goodReport(),
      get state(): string {
        throw new Error('boom');
      },
    }),
  ],
  [
    'a report() that throws OMNI_ERR_INVALID_ARGUMENT',
    () => {
      throw new InvalidArgumentError('not the probe’s fault');
    },
  ],
  [
    'a report() that throws OMNI_ERR_UNAVAILABLE',
    () => {
      throw new UnavailableError('stopped');
    },
  ],
  [
    'a report() that throws a string',
    () => {
      throw 'plain';
    },
  ],
];

let answer: () => unknown = goodReport;
let handle: ServeHandle;

beforeAll(async () => {
  const served = reportingServed(() => answer());
  handle = await serve(served, { host: '127.0.0.1', port: 0, closeRuntime: false });
});

afterAll(async () => {
  await handle.drain({ timeoutMs: 10_000 });
});

async function probe(): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await handle.app.inject({ method: 'GET', url: '/health' });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
}

describe('GET /health over a report() that is no report', () => {
  it.each(GARBAGE)('%s: 500 OMNI_ERR_INTERNAL', async (_what, report) => {
    answer = report;
    const { status, body } = await probe();
    expect({ status, code: body.code }).toEqual({ status: 500, code: 'OMNI_ERR_INTERNAL' });
  });

  it('a real report keeps the documented answers: 200 when ready, 503 with the same body otherwise', async () => {
    const fields = { depth: 2, capacity: 8, rejected: 0, units: 2, unitCapacity: null, waiting: 0 };
    answer = () => goodReport();
    expect(await probe()).toEqual({ status: 200, body: { state: 'ready', ...fields } });
    for (const state of ['starting', 'failed', 'stopped', 'a state of its own']) {
      answer = () => goodReport(state);
      expect(await probe()).toEqual({ status: 503, body: { state, ...fields } });
    }
    // Capacities may be null (the serial scheduler's requests, no unit ceiling).
    answer = () => ({ ...goodReport(), capacity: null });
    expect(await probe()).toEqual({ status: 200, body: { state: 'ready', ...fields, capacity: null } });
  });
});

describe('a server that drains', () => {
  it('reports a ready runtime as draining, and one in any other state as it is', async () => {
    let state = 'failed';
    const s = await serve(
      reportingServed(() => goodReport(state)),
      { port: 0, closeRuntime: false },
    );
    await s.drain({ timeoutMs: 10_000 });
    const shown = async (): Promise<string | undefined> =>
      /^omni_runtime_state\{state="(\w+)"\} 1$/m.exec((await s.metrics.scrape()).text)?.[1];
    // A failed runtime read as merely draining: the failure was hidden once a drain began.
    expect(await shown()).toBe('failed');
    state = 'ready';
    expect(await shown()).toBe('draining');
  });

  // The server wrote 'draining' into the object report() returned: for a report of one's own
  // that was frozen or whose state was a getter alone, /health and /metrics answered 500 for the
  // whole drain; one the caller kept stayed 'draining' after it.
  class Wrapped {
    readonly #state = 'ready';
    readonly #depth = 2;
    constructor() {
      const { state: _state, depth: _depth, ...rest } = goodReport();
      Object.assign(this, rest);
    }
    get state(): string {
      return this.#state;
    }
    get depth(): number {
      return this.#depth;
    }
  }
  const kept = goodReport();
  const OWN: Array<[string, () => unknown]> = [
    ['frozen', () => Object.freeze(goodReport())],
    ['with a state getter alone', () => Object.defineProperty(goodReport(), 'state', { get: () => 'ready' })],
    ['kept by its caller', () => kept],
    ['of a class whose getters read private fields', () => new Wrapped()],
  ];
  it.each(OWN)('a report %s is shown draining, and left as it was', async (_what, report) => {
    // A call held in the runtime keeps the drain going while /health and /metrics are read.
    let entered!: () => void;
    const running = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let finish!: () => void;
    const served = {
      ...reportingServed(report),
      run: async () => {
        entered();
        await new Promise<void>((resolve) => {
          finish = resolve;
        });
        return new Float32Array(1);
      },
    };
    const s = await serve(served, { port: 0, closeRuntime: false });
    const call = s.app.inject({
      method: 'POST',
      url: '/v1/linear',
      headers: { 'content-type': 'application/octet-stream' },
      payload: Buffer.alloc(4),
    });
    await running;
    const drained = s.drain({ timeoutMs: 10_000 });
    const health = await s.app.inject({ method: 'GET', url: '/health' });
    expect({ status: health.statusCode, state: health.json().state, depth: health.json().depth }).toEqual({
      status: 503,
      state: 'draining',
      depth: 2,
    });
    const text = (await s.metrics.scrape()).text;
    expect(/^omni_runtime_state\{state="(\w+)"\} 1$/m.exec(text)?.[1]).toBe('draining');
    expect(text).toMatch(/^omni_runtime_depth 2$/m);
    expect((report() as RuntimeReport).state).toBe('ready');
    finish();
    expect((await call).statusCode).toBe(200);
    expect((await drained).clean).toBe(true);
  });
});
