/**
 * Randomized traffic over raw sockets against one server: mostly legal requests of every route,
 * odd methods, paths, headers and framings, bodies around the size limit, pipelining, and
 * clients that send in pieces, half-close, reset mid-body or leave before their answer. Checks
 * that every answer is well-formed HTTP in order, that error answers carry a documented code
 * with its status, and that once every socket is closed nothing is left in flight, every
 * request is in the latency histogram once and a drain is clean. A fixed seed and run count
 * (printed) make a failure reproducible.
 *
 * The requests are made in test/fixtures/serve-fuzz-requests.ts, sent and checked in
 * test/fixtures/serve-fuzz-answers.ts.
 */
import type { IncomingMessage } from 'node:http';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { afterClosingAnswer } from '../src/serve/client-error.js';
import { type ServeHandle, serve } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { pipelinedExchange } from './fixtures/serve-client.js';
import { check, exchange, type Outcome } from './fixtures/serve-fuzz-answers.js';
import { BODY_LIMIT, connArb, floats, head, IN, UNITS } from './fixtures/serve-fuzz-requests.js';
import { GATE } from './fixtures/serve-gate-layout.js';
import { type Gated, startGated } from './fixtures/serve-harness.js';

const OUT = 3;
const SEED = Number(process.env.SERVE_FUZZ_SEED ?? 20261201);
const RUNS = Number(process.env.SERVE_FUZZ_RUNS ?? 150);

/**
 * Until the server holds no connection and the runtime no call: nothing more can arrive. (A
 * worker gives its capacity back before its result reaches this thread: depth reads 0 a little
 * before running does.)
 */
async function quiet(s: ServeHandle, g: Gated): Promise<void> {
  const connections = (): Promise<number> =>
    new Promise((resolve, reject) =>
      s.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
    );
  const idle = (): boolean => {
    const r = g.lr.report();
    return r.depth === 0 && r.running === 0 && r.queued === 0;
  };
  await until(async () => (await connections()) === 0 && idle(), 'the server to be quiet');
}

let started: { g: Gated; s: ServeHandle } | undefined;
afterAll(async () => {
  await started?.s.close();
});

describe(`randomized traffic (seed ${SEED}, ${RUNS} runs; SERVE_FUZZ_SEED, SERVE_FUZZ_RUNS)`, () => {
  it('every answer well-formed and documented; nothing left in flight; the drain is clean', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(String(w));
    process.on('warning', onWarning);
    const g = await startGated({
      inFeatures: IN,
      outFeatures: OUT,
      threads: 1,
      open: true,
      admission: { requests: 2, units: UNITS },
    });
    const s = await serve(g.lr, { port: 0, bodyLimit: BODY_LIMIT, deadlineMs: 30_000 });
    started = { g, s };
    // Every request whose head was whole, as node hands it over ('checkExpectation': an Expect
    // this server does not support), for the latency histogram's count at the end.
    const heads: IncomingMessage[] = [];
    const heard = (req: IncomingMessage): void => {
      heads.push(req);
    };
    s.app.server.on('request', heard);
    s.app.server.on('checkExpectation', heard);
    const statuses = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        fc.array(connArb, { minLength: 1, maxLength: 8 }),
        fc.option(fc.integer({ min: 0, max: 8 })),
        async (conns, openAfter) => {
          // Half the runs start with the request bound held by two calls at the closed gate: every
          // call of the batch is refused (503) until the gate opens after `openAfter` connections
          // ended. No exchange needs a worker meanwhile, so each can end.
          let held: Promise<unknown> | undefined;
          if (openAfter !== null) {
            // The last run's connections may still be read (a client that left) or end calls.
            await quiet(s, g);
            Atomics.store(g.words, GATE, 0);
            const one = Buffer.concat([
              Buffer.from(
                head('POST', '/v1/linear', [
                  ['Content-Type', 'application/octet-stream'],
                  ['Content-Length', '16'],
                ]),
              ),
              floats([1, 2, 3, 4]),
            ]);
            held = pipelinedExchange(s.port, Buffer.concat([one, one]), 2);
            await until(() => g.lr.report().depth === 2, 'the bound to be held');
          }
          let ended = 0;
          const opened = (): void => {
            if (openAfter !== null && ++ended === Math.min(openAfter, conns.length)) g.open();
          };
          if (openAfter === 0) g.open();
          const outs = await Promise.all(
            conns.map(async (c) => {
              const out = await exchange(s.port, c);
              opened();
              return out;
            }),
          );
          if (held !== undefined) expect(await held).toEqual({ statuses: [200, 200], closed: false });
          const problems: string[] = [];
          conns.forEach((c, i) => {
            const out = outs[i] as Outcome;
            for (const a of out.finals) {
              const key = `${a.status}`;
              statuses.set(key, (statuses.get(key) ?? 0) + 1);
            }
            const heard = out.finals.map(
              (a) => `${a.status}${a.headers.get('connection')?.[0] === 'close' ? '+close' : ''}`,
            );
            for (const p of check(c, out))
              problems.push(
                `conn ${i} [${c.behaviour}] heard ${heard.join(',')}${out.reset ? ' (reset)' : ''}: ${p}`,
              );
          });
          if (problems.length > 0) throw new Error(problems.join('\n'));
        },
      ),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    // The traffic reached every kind of answer it is meant to: a generator that stopped making
    // refusals or bad bodies would otherwise pass on what is left.
    if (RUNS >= 100) {
      for (const status of ['200', '400', '404', '405', '413', '415', '503']) {
        expect(statuses.get(status) ?? 0, `answers ${status}`).toBeGreaterThan(0);
      }
    }

    // Every socket is closed: the server must come back to rest.
    await quiet(s, g);
    await until(
      async () => sample((await s.metrics.scrape()).text, 'omni_http_inflight') === 0,
      'no request in flight',
    );
    const report = g.lr.report();
    expect(report).toMatchObject({ depth: 0, running: 0, queued: 0, units: 0, waiting: 0 });
    const text = (await s.metrics.scrape()).text;
    // The runtime counts a cost that can never fit (413 too-large) as a refusal too.
    const refusedByRuntime = [
      ['requests', 503],
      ['units', 503],
      ['queued', 503],
      ['too-large', 413],
    ]
      .map(([r, status]) => sample(text, `omni_http_refused_total{reason="${r}",status="${status}"}`) ?? 0)
      .reduce((a, b) => a + b, 0);
    expect(refusedByRuntime).toBe(report.rejected);
    expect(report.refused).toBe(report.rejected);
    // Each request recorded once, those after an answer that closed the connection aside (never
    // run: README). Before: 4 or 5 of 938 short at this seed, dropped by node without 'finish'.
    const recorded = text
      .split('\n')
      .filter((line) => line.startsWith('omni_http_request_duration_seconds_count{'))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    expect(recorded).toBe(heads.filter((req) => !afterClosingAnswer(req)).length);
    expect(await s.drain({ timeoutMs: 600_000 })).toEqual({ clean: true, abandonedRequests: 0 });
    process.off('warning', onWarning);
    expect(warnings).toEqual([]);
  });
});
