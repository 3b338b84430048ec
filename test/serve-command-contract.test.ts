/**
 * `omni-runtime serve` beyond serve-cli.test.ts: every flag reaches the runtime or the server it
 * configures, a listener that cannot start closes the runtime it started, a signal during start
 * stops it without listening, the signal listeners go away when the command returns (those the
 * caller installed stay with the caller), and a drained child exits at once even with a long drain
 * timeout. In-process runs take their signals from an EventEmitter and the gated fixture worker;
 * ordering is by the command's printed lines and the gate, never by sleeps.
 */
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeArgs, runServeCommand } from '../src/cli/serve-command.js';
import { ShutdownSignals } from '../src/cli/shutdown-signals.js';
import type { LinearRuntimeOptions } from '../src/index.js';
import { packageRoot } from '../src/paths.js';
import { codeOf, rejection } from './fixtures/runtime-harness.js';
import { get, postFloats } from './fixtures/serve-client.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import { closeServed, type Gated, gatedForTest } from './fixtures/serve-harness.js';

const GATED_CLI = join(packageRoot, 'dist', 'test', 'fixtures', 'serve-gated-cli.js');
const LISTENING = /listening on (http:\/\/127\.0\.0\.1:(\d+))/;

const cleanups: (() => void)[] = [];

afterEach(async () => {
  await closeServed();
  for (const c of cleanups.splice(0)) c();
});

interface InProcess {
  readonly signals: EventEmitter;
  readonly lines: string[];
  readonly exitCode: Promise<number>;
  readonly started: Promise<{ url: string; gated: Gated; options: LinearRuntimeOptions }>;
  /** Resolves once a printed line matches. */
  line(pattern: RegExp): Promise<void>;
}

function runInProcess(argv: string[]): InProcess {
  const signals = new EventEmitter();
  const lines: string[] = [];
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  let gated: Gated | undefined;
  let options: LinearRuntimeOptions | undefined;
  let announce: (url: string) => void = () => {};
  const listening = new Promise<string>((resolve) => {
    announce = resolve;
  });
  const exitCode = runServeCommand(argv, {
    signals: signals as unknown as NodeJS.Process,
    out: (l) => {
      lines.push(l);
      const m = LISTENING.exec(l);
      if (m) announce(m[1]!);
      for (const w of waiters) if (w.pattern.test(l)) w.resolve();
    },
    startRuntime: async (given) => {
      options = given;
      gated = await gatedForTest({
        threads: given.threads,
        admission: given.admission,
        deadlineMs: given.deadlineMs,
        inFeatures: given.inFeatures,
        outFeatures: given.outFeatures,
      });
      return gated.lr;
    },
  });
  return {
    signals,
    lines,
    exitCode,
    started: listening.then((url) => ({ url, gated: gated!, options: options! })),
    line: (pattern) =>
      lines.some((l) => pattern.test(l))
        ? Promise.resolve()
        : new Promise((resolve) => waiters.push({ pattern, resolve })),
  };
}

/**
 * Starts serve with `argv`, holds one request at the worker's gate, sends SIGTERM and waits until
 * the drain has begun: it now waits for that request. `stuck` is how the request ended.
 */
async function drainingWithOneHeld(argv: string[]) {
  const run = runInProcess(argv);
  const { url, gated } = await run.started;
  const stuck = postFloats(url, [1, 2]).then(
    (a) => a.status,
    () => 'connection closed',
  );
  await gated.reach(ENTERED, 1);
  run.signals.emit('SIGTERM');
  await run.line(/SIGTERM: draining/);
  return { run, gated, stuck };
}

/** A 2 -> 2 gated runtime with its gate open, stopped by afterEach if a test leaves it. */
async function openGated(given: LinearRuntimeOptions): Promise<Gated> {
  const gated = await gatedForTest({ ...given, inFeatures: 2, outFeatures: 2, open: true });
  return gated;
}

describe('serve flags', () => {
  it('a blank --host and a port above 65535 are usage errors; 65535 is a port', () => {
    for (const argv of [
      ['--host', ' '],
      ['--port', '65536'],
    ]) {
      expect(() => parseServeArgs(argv)).toThrow(expect.objectContaining({ code: 'OMNI_ERR_USAGE' }));
    }
    expect(parseServeArgs(['--port', '65535'])).toMatchObject({ port: 65_535 });
  });
});

/** The least a command line needs here: any port, two features (the gated worker's). */
const SMALL = ['--port', '0', '--in-features', '2'];

describe('runServeCommand in-process', () => {
  it('every flag reaches what it configures: threads, device, bounds, body limit, Retry-After', async () => {
    const run = runInProcess([
      '--port',
      '0',
      '--threads',
      '2',
      '--requests',
      '1',
      '--units',
      '2',
      '--backend',
      'fixture',
      '--fixture-library',
      '/opt/omni/libomni_fixture.so',
      '--device',
      '3',
      '--body-limit',
      '64',
      '--retry-after',
      '7',
      '--in-features',
      '2',
      '--out-features',
      '2',
    ]);
    const { url, gated, options } = await run.started;
    expect(options).toMatchObject({
      threads: 2,
      inFeatures: 2,
      outFeatures: 2,
      backend: 'fixture',
      libraries: { fixture: '/opt/omni/libomni_fixture.so', cuda: undefined },
      device: 3,
      admission: { requests: 1, units: 2 },
    });
    // More rows than --units: never fits.
    const cost = await postFloats(url, [1, 2, 3, 4, 5, 6]);
    expect(cost.status).toBe(413);
    expect(cost.json?.code).toBe('OMNI_ERR_TOO_LARGE');
    // A body over --body-limit.
    const body = await postFloats(url, new Float32Array(32));
    expect(body.status).toBe(413);
    expect(body.json?.code).toBe('OMNI_ERR_BODY_TOO_LARGE');
    // --requests 1 held at the gate: the next call is refused with --retry-after.
    const held = postFloats(url, [1, 2]);
    await gated.reach(ENTERED, 1);
    const refused = await postFloats(url, [1, 2]);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('7');
    gated.open();
    expect((await held).status).toBe(200);
    run.signals.emit('SIGTERM');
    expect(await run.exitCode).toBe(0);
    // The command's signal listeners are gone once it returns.
    expect(run.signals.listenerCount('SIGTERM')).toBe(0);
    expect(run.signals.listenerCount('SIGINT')).toBe(0);
  });

  it('--drain-timeout-ms bounds the drain: a request still held then is abandoned, exit 1', async () => {
    const { run, gated, stuck } = await drainingWithOneHeld([
      '--port',
      '0',
      '--threads',
      '1',
      '--requests',
      '2',
      '--drain-timeout-ms',
      '1',
      '--in-features',
      '2',
    ]);
    // Set after the drain's 1 ms timer: by the time it fires, the drain has given up.
    expect(await codeOf(gated.lr.run(new Float32Array(2), { deadlineMs: 1 }))).toBe('OMNI_ERR_DEADLINE');
    gated.open();
    expect(await run.exitCode).toBe(1);
    expect(run.lines.at(-1)).toMatch(/drain not clean \(1 request abandoned\)/);
    expect([200, 503, 'connection closed']).toContain(await stuck);
  });

  it('times past 2^31 - 1 ms reach the runtime and server whole, and none fires after 1 ms', async () => {
    const long = String(2 ** 31);
    const argv = [...SMALL, '--deadline-ms', long, '--drain-timeout-ms', long];
    argv.push('--request-timeout-ms', long, '--send-timeout-ms', long);
    // Refused, the command would never listen and the rest would wait for nothing.
    expect(() => parseServeArgs(argv)).not.toThrow();
    const { run, gated, stuck } = await drainingWithOneHeld(argv);
    const { options } = await run.started;
    expect(options.deadlineMs).toBe(2 ** 31);
    // A 1 ms deadline set after the held call's deadline and the drain's timer: either one cut
    // to 1 ms (Node's setTimeout past 2^31 - 1) would have fired first, answering the held
    // request 504 or abandoning it and closing the runtime.
    expect(await codeOf(gated.lr.run(new Float32Array(2), { deadlineMs: 1 }))).toBe('OMNI_ERR_DEADLINE');
    expect(gated.lr.report()).toMatchObject({ state: 'ready', deadline: 1 });
    gated.open();
    expect(await stuck).toBe(200);
    expect(await run.exitCode).toBe(0);
  });

  it('--drain-timeout-ms 0: the drain abandons the held request at once, exit 1', async () => {
    const { run, gated, stuck } = await drainingWithOneHeld([...SMALL, '--drain-timeout-ms', '0']);
    // The gate stays shut: only abandoning the call can end this drain.
    expect(await run.exitCode).toBe(1);
    expect(run.lines.at(-1)).toMatch(/drain not clean \(1 request abandoned\)/);
    expect(gated.lr.report()).toMatchObject({ state: 'stopped', depth: 0 });
    expect([503, 'connection closed']).toContain(await stuck);
  });

  it('a second signal during the drain abandons the held request at once, whatever --drain-timeout-ms', async () => {
    const { run, gated, stuck } = await drainingWithOneHeld([...SMALL, '--drain-timeout-ms', '600000']);
    // The drain waits for the held request; only the second signal can end it.
    run.signals.emit('SIGINT');
    expect(await run.exitCode).toBe(1);
    expect(run.lines).toContain('omni-runtime serve: SIGINT again: abandoning in-flight requests');
    expect(gated.lr.report()).toMatchObject({ state: 'stopped', depth: 0 });
    expect([503, 'connection closed']).toContain(await stuck);
  });

  it('a signal while the runtime starts: it never listens, closes the runtime, exit 0', async () => {
    const signals = new EventEmitter();
    const lines: string[] = [];
    let gated: Gated | undefined;
    const exitCode = await runServeCommand(SMALL, {
      signals: signals as unknown as NodeJS.Process,
      out: (l) => lines.push(l),
      startRuntime: async (given) => {
        signals.emit('SIGTERM');
        gated = await openGated(given);
        return gated.lr;
      },
    });
    expect(exitCode).toBe(0);
    expect(lines).toEqual(['omni-runtime serve: SIGTERM while starting: stopping']);
    expect(gated!.lr.report().state).toBe('stopped');
    expect(signals.listenerCount('SIGTERM')).toBe(0);
  });

  // A failed runtime closes clean (nothing is outstanding): the exit status must come from the
  // failure, not from the close.
  it('a signal while the runtime starts, which had failed by then: one line on stderr, exit 1', async () => {
    const signals = new EventEmitter();
    const lines: string[] = [];
    const errors: string[] = [];
    let gated: Gated | undefined;
    const exitCode = await runServeCommand(SMALL, {
      signals: signals as unknown as NodeJS.Process,
      out: (l) => lines.push(l),
      err: (l) => errors.push(l),
      startRuntime: async (given) => {
        signals.emit('SIGTERM');
        gated = await openGated(given);
        const lr = gated.lr;
        return {
          run: (x, options) => lr.run(x, options),
          report: () => ({ ...lr.report(), state: 'failed' as const }),
          close: (options) => lr.close(options),
          inFeatures: lr.inFeatures,
          outFeatures: lr.outFeatures,
          backend: lr.backend,
          runtime: { failure: Object.assign(new Error('sticky'), { code: 'OMNI_ERR_NATIVE' }) },
        };
      },
    });
    expect(exitCode).toBe(1);
    expect(lines).toEqual(['omni-runtime serve: SIGTERM while starting: stopping']);
    expect(errors).toEqual(['omni-runtime serve: the runtime failed: OMNI_ERR_NATIVE: sticky']);
    expect(gated!.lr.report().state).toBe('stopped');
  });

  it('listeners the caller installed (the CLI, before loading serve) are used and left to it', async () => {
    const signals = new EventEmitter();
    const listening = new ShutdownSignals(signals as unknown as NodeJS.Process);
    signals.emit('SIGINT');
    const lines: string[] = [];
    const exitCode = await runServeCommand(SMALL, {
      listening,
      out: (l) => lines.push(l),
      startRuntime: async (given) => (await openGated(given)).lr,
    });
    expect(exitCode).toBe(0);
    expect(lines).toEqual(['omni-runtime serve: SIGINT while starting: stopping']);
    expect(signals.listenerCount('SIGINT')).toBe(1);
    listening.dispose();
    expect(signals.listenerCount('SIGINT')).toBe(0);
  });

  it('a port already in use: the listen error, and the runtime it started is closed', async () => {
    const busy: Server = createServer();
    cleanups.push(() => busy.close());
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    let gated: Gated | undefined;
    const failure = await rejection(
      runServeCommand(['--port', String(port), '--in-features', '2'], {
        signals: new EventEmitter() as unknown as NodeJS.Process,
        out: () => {},
        startRuntime: async (given) => {
          gated = await gatedForTest({ ...given, inFeatures: 2, outFeatures: 2, open: true });
          return gated.lr;
        },
      }),
    );
    expect(failure.code).toBe('EADDRINUSE');
    expect(gated!.lr.report().state).toBe('stopped');
  });
});

describe('the serve process', () => {
  it('exits as soon as it has drained, even with a long --drain-timeout-ms', async () => {
    const child = spawn(
      process.execPath,
      [GATED_CLI, '--port', '0', '--in-features', '2', '--drain-timeout-ms', '600000'],
      { cwd: packageRoot },
    );
    cleanups.push(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const lines = createInterface({ input: child.stdout });
    const url = await new Promise<string>((resolve) =>
      lines.on('line', (l) => {
        const m = LISTENING.exec(l);
        if (m) resolve(m[1]!);
      }),
    );
    expect((await get(url, '/health')).status).toBe(200);
    child.kill('SIGTERM');
    // Nothing in flight: a timer left armed for the drain timeout would hold the process.
    expect(await exit).toBe(0);
  }, 30_000);
});
