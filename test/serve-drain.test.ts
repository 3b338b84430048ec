/**
 * Graceful drain of an in-process server: the listener closes, calls on connections that were
 * already open hear 503 (GET /health too), in-flight work finishes with 200, then the
 * runtime closes. In-flight work is held at the fixture worker's gate, not by sleeps.
 */
import { Agent, request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { SERVE_HELP } from '../src/cli/serve-command.js';
import { TaskFailedError, WorkerExitedError } from '../src/errors.js';
import { type Served, serve } from '../src/serve/index.js';
import { codeOf } from './fixtures/runtime-harness.js';
import { postFloats, tryConnect } from './fixtures/serve-client.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import { clients, closeServed, gatedForTest, serveForTest } from './fixtures/serve-harness.js';

afterEach(closeServed);

/** An agent that keeps exactly one connection, so its next request reuses the open one. */
function keepAlive(): Agent {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  clients.push(agent);
  return agent;
}

interface Heard {
  status: number;
  connection: string | undefined;
  json: Record<string, unknown>;
}

function request(agent: Agent, url: string, method = 'GET', body?: Buffer): Promise<Heard> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { agent, method, headers: body ? { 'content-type': 'application/octet-stream' } : {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            connection: res.headers.connection,
            json: res.headers['content-type']?.includes('json')
              ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>)
              : {},
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('drain', () => {
  it('503 on open connections (health included), no new connections, in-flight work ends 200', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, admission: { requests: 2 } });
    const s = await serve(g.lr, { port: 0 });
    const url = s.address;
    const healthAgent = keepAlive();
    const postAgent = keepAlive();
    // Open one connection for each agent before the drain.
    expect((await request(healthAgent, `${url}/health`)).status).toBe(200);
    expect((await request(postAgent, `${url}/health`)).status).toBe(200);

    const inflight = postFloats(url, [1, 2, 3, 4]);
    await g.reach(ENTERED, 1);
    // Not the default 10 s (nor in the tests below): a machine stalled that long must not
    // abandon the work these tests wait for.
    const drained = s.drain({ timeoutMs: 600_000 });
    expect(s.state).toBe('draining');

    const health = await request(healthAgent, `${url}/health`);
    expect(health.status).toBe(503);
    expect(health.json).toMatchObject({ state: 'draining', depth: 1, capacity: 2 });
    expect(health.connection).toBe('close');

    const refused = await request(
      postAgent,
      `${url}/v1/linear`,
      'POST',
      Buffer.from(new Float32Array(4).buffer),
    );
    expect(refused.status).toBe(503);
    expect(refused.json).toMatchObject({ code: 'OMNI_ERR_UNAVAILABLE', state: 'draining' });
    expect(refused.connection).toBe('close');

    expect(await tryConnect(s.port)).toBe('ECONNREFUSED');
    // Nothing new reached the worker; the in-flight call is still held.
    expect(g.entered()).toBe(1);
    expect(g.lr.report().state).toBe('ready');

    g.open();
    const answer = await inflight;
    expect(answer.status).toBe(200);
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
    expect(s.state).toBe('closed');
    expect(g.lr.report()).toMatchObject({ state: 'stopped', depth: 0 });
    expect(g.entered()).toBe(1);
  });

  it('on open connections only the run route and /health answer 503, as `serve --help` says', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, admission: { requests: 2 } });
    const s = await serve(g.lr, { port: 0 });
    const asks = [
      ['POST', '/v1/linear'],
      ['GET', '/health'],
      ['GET', '/metrics'],
      ['GET', '/nothing'],
      ['PUT', '/v1/linear'],
    ] as const;
    // One connection each, opened before the drain: each answer now closes its connection.
    const opened = asks.map(() => keepAlive());
    for (const agent of opened) expect((await request(agent, `${s.address}/health`)).status).toBe(200);
    const inflight = postFloats(s.address, [1, 2, 3, 4]);
    await g.reach(ENTERED, 1);
    const drained = s.drain({ timeoutMs: 600_000 });
    const heard: Record<string, number> = {};
    for (const [i, [method, path]] of asks.entries()) {
      const body = method === 'GET' ? undefined : Buffer.from(new Float32Array(4).buffer);
      const answer = await request(opened[i] as Agent, `${s.address}${path}`, method, body);
      heard[`${method} ${path}`] = answer.status;
    }
    expect(heard).toEqual({
      'POST /v1/linear': 503,
      'GET /health': 503,
      'GET /metrics': 200,
      'GET /nothing': 404,
      'PUT /v1/linear': 405,
    });
    // Before, the help said every new request was answered 503.
    const said = SERVE_HELP.slice(SERVE_HELP.indexOf('SIGTERM or SIGINT drains')).replace(/\s+/g, ' ');
    expect(said).toMatch(/^[^.]*POST \/v1\/linear and GET \/health answer 503 \(\/metrics still 200/);
    g.open();
    expect((await inflight).status).toBe(200);
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
  });

  it('a request in flight when the drain starts is answered with Connection: close', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, admission: { requests: 2 } });
    const s = await serve(g.lr, { port: 0 });
    const agent = keepAlive();
    // The request arrives while serving, on a kept-alive connection, and is answered during the
    // drain: a client reusing that connection would otherwise be reset when the drain ends.
    const inflight = request(
      agent,
      `${s.address}/v1/linear`,
      'POST',
      Buffer.from(new Float32Array(4).buffer),
    );
    await g.reach(ENTERED, 1);
    const drained = s.drain({ timeoutMs: 600_000 });
    g.open();
    const answer = await inflight;
    expect(answer.status).toBe(200);
    expect(answer.connection).toBe('close');
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
  });

  /**
   * A drain with no request in flight but work still holding capacity: a call whose caller heard
   * 504, queued behind a call (no request of the server's, no deadline) held at the gate. Waiting
   * instead for the 504's own call to reach the gate raced its deadline: a worker thread that
   * started it late skipped it, and nothing was left to wait for.
   */
  async function drainWaitingOnRuntime(timeoutMs: number) {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, admission: { requests: 2 } });
    const s = await serve(g.lr, { port: 0 });
    const held = g.lr.run(new Float32Array(4), { deadlineMs: Number.POSITIVE_INFINITY }).then(
      (y) => y.length,
      (err: { code?: string }) => err.code,
    );
    await g.reach(ENTERED, 1);
    const late = postFloats(s.address, [1, 2, 3, 4], { headers: { 'x-omni-deadline-ms': '50' } });
    expect((await late).status).toBe(504);
    // Both calls still hold their capacity: the 504's is given back only when it is skipped.
    expect(g.lr.report()).toMatchObject({ depth: 2, deadline: 1 });
    return { g, s, held, drained: s.drain({ timeoutMs }) };
  }

  it('waits for work whose caller already heard 504 before closing the runtime', async () => {
    const { g, held, drained } = await drainWaitingOnRuntime(600_000);
    let settled = false;
    void drained.then(() => {
      settled = true;
    });
    // No request is in flight, but the work still holds its capacity: the drain waits for it.
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    expect(g.lr.report()).toMatchObject({ state: 'draining', depth: 2 });
    g.open();
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
    expect(g.lr.report()).toMatchObject({ state: 'stopped', depth: 0, completed: 1, deadline: 1 });
    expect(await held).toBe(2);
    expect(g.entered()).toBe(1); // the 504's call was skipped, never run
  });

  it('expireDrain while the drain waits on the runtime alone abandons that work at once', async () => {
    const { g, s, held, drained } = await drainWaitingOnRuntime(600_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(g.lr.report()).toMatchObject({ state: 'draining', depth: 2 });
    s.expireDrain(); // the gate stays shut: only the forced close can end this drain
    expect(await drained).toEqual({ clean: false, abandonedRequests: 0 });
    expect(g.lr.report()).toMatchObject({ state: 'stopped', depth: 0 });
    expect(await held).toBe('OMNI_ERR_WORKER_EXITED');
  });

  it.each([
    ['drain({ timeoutMs: 2^31 })', {}, { timeoutMs: 2 ** 31 }],
    ['drain({ timeoutMs: Infinity })', {}, { timeoutMs: Number.POSITIVE_INFINITY }],
    ['drainTimeoutMs: Infinity', { drainTimeoutMs: Number.POSITIVE_INFINITY }, {}],
  ])(
    '%s waits for the work, instead of abandoning it after 1 ms or refusing',
    async (_name, options, drain) => {
      const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, admission: { requests: 2 } });
      const s = await serve(g.lr, { port: 0, ...options });
      const inflight = postFloats(s.address, [1, 2, 3, 4]);
      await g.reach(ENTERED, 1);
      const drained = s.drain(drain);
      // A 1 ms deadline set after the drain's timer: a timeout cut to 1 ms would have fired
      // first (same duration, earlier) and closed the runtime before this call was refused.
      expect(await codeOf(g.lr.run(new Float32Array(4), { deadlineMs: 1 }))).toBe('OMNI_ERR_DEADLINE');
      expect(g.lr.report().state).toBe('ready');
      expect(s.state).toBe('draining');
      g.open();
      expect((await inflight).status).toBe(200);
      expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
      expect(g.lr.report()).toMatchObject({ state: 'stopped', depth: 0 });
    },
  );

  it('an idle server drained with a 1 ms timeout is clean: the runtime teardown is not abandoned work', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, admission: { requests: 2 } });
    g.open();
    const s = await serve(g.lr, { port: 0 });
    expect((await postFloats(s.address, [1, 2, 3, 4])).status).toBe(200);
    // Closing the threads takes longer than 1 ms, but nothing was running to abandon.
    expect(await s.drain({ timeoutMs: 1 })).toEqual({ clean: true, abandonedRequests: 0 });
    expect(g.lr.report()).toMatchObject({ state: 'stopped', depth: 0, completed: 1 });
  });

  it('a drain timeout abandons work still held: the result says so and the runtime still stops', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, admission: { requests: 2 } });
    const s = await serve(g.lr, { port: 0 });
    const stuck = postFloats(s.address, [1, 2, 3, 4]).then(
      (a) => `${a.status} ${String(a.json?.code)}`,
      () => 'connection closed',
    );
    await g.reach(ENTERED, 1);
    const result = await s.drain({ timeoutMs: 50 });
    expect(result).toEqual({ clean: false, abandonedRequests: 1 });
    expect(g.lr.report()).toMatchObject({ state: 'stopped', depth: 0 });
    // The abandoned request hears a 503 (the server went away: send it again elsewhere; before,
    // a 500 OMNI_ERR_WORKER_EXITED, as for a thread lost while serving) or loses its connection.
    expect(['503 OMNI_ERR_UNAVAILABLE', 'connection closed']).toContain(await stuck);
  });

  it('a thread lost during a drain, before its timeout, is still a 500 OMNI_ERR_WORKER_EXITED', async () => {
    const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, admission: { requests: 2 } });
    g.open();
    // The call's end is the test's: its thread is lost while the drain still waits for it, which
    // the drain did not cause (no timeout, no second signal), so no retry elsewhere is invited.
    let entered!: () => void;
    const reached = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let lose!: (error: Error) => void;
    const served: Served = {
      run: () => {
        entered();
        return new Promise((_resolve, reject) => {
          lose = reject;
        });
      },
      report: () => g.lr.report(),
      close: (options) => g.lr.close(options),
      inFeatures: g.lr.inFeatures,
      outFeatures: g.lr.outFeatures,
    };
    const s = await serve(served, { port: 0 });
    const answer = postFloats(s.address, [1, 2, 3, 4]);
    await reached;
    const drained = s.drain({ timeoutMs: 600_000 });
    expect(s.state).toBe('draining');
    lose(new WorkerExitedError('worker exited with code 1'));
    const a = await answer;
    expect(`${a.status} ${String(a.json?.code)}`).toBe('500 OMNI_ERR_WORKER_EXITED');
    expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
  });

  it('a call that fails otherwise as the drain abandons it: its own failure (500), not a 503', async () => {
    const g = await gatedForTest({ inFeatures: 2, outFeatures: 2, open: true });
    let entered!: () => void;
    const reached = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let fail!: (error: Error) => void;
    let heard!: Promise<unknown>;
    // Its close (the drain's timeout passed) fails the running call with an error of its own,
    // not the lost thread only the drain's abandoning explains, and ends once its answer is out.
    const served: Served = {
      run: (() => {
        entered();
        return new Promise((_resolve, reject) => {
          fail = reject;
        });
      }) as unknown as Served['run'],
      report: () => g.lr.report(),
      close: (async (options?: { timeoutMs?: number }) => {
        fail(new TaskFailedError('the call failed'));
        await heard;
        await g.lr.close(options);
        return { clean: false, abandoned: 1 };
      }) as Served['close'],
      inFeatures: 2,
      outFeatures: 2,
    };
    const s = await serveForTest(served);
    const answer = postFloats(s.address, [1, 2]);
    heard = answer;
    await reached;
    expect(await s.drain({ timeoutMs: 0 })).toEqual({ clean: false, abandonedRequests: 1 });
    const a = await answer;
    expect(`${a.status} ${String(a.json?.code)}`).toBe('500 OMNI_ERR_TASK_FAILED');
  });
});
