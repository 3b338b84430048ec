/**
 * `omni-runtime serve` as a user runs it: flags, one-line usage errors, the printed address, and
 * SIGTERM/SIGINT mid-load (in-flight requests finish 200, exit 0). Child processes are the built
 * CLI (dist/src/cli.js, native CPU fixture) and the same command with the gated fixture worker
 * (dist/test/fixtures/serve-gated-cli.js), whose gate the test opens through the child's stdin.
 * Cross-process ordering is by polling /health or /metrics in bounded loops, never by sleeps.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { connect } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import { parseServeArgs, runServeCommand } from '../src/cli/serve-command.js';
import { LinearRuntime, type LinearRuntimeOptions, OmniError, Runtime, seededWeights } from '../src/index.js';
import { defaultLibraryPath, referenceLinearGelu } from '../src/native/index.js';
import { builtModuleUrl, packageRoot } from '../src/paths.js';
import { sample } from './fixtures/metrics-text.js';
import { codeOf } from './fixtures/runtime-harness.js';
import { floatsOf, get, postFloats, postJson, rawExchange, tryConnect } from './fixtures/serve-client.js';
import { ENTERED, expectedRow, FAIL_FATAL, HELD_INPUT } from './fixtures/serve-gate-layout.js';
import { type Gated, startGated } from './fixtures/serve-harness.js';

const CLI = join(packageRoot, 'dist', 'src', 'cli.js');
const GATED_CLI = join(packageRoot, 'dist', 'test', 'fixtures', 'serve-gated-cli.js');

interface Child {
  readonly process: ChildProcessWithoutNullStreams;
  readonly stdout: string[];
  readonly stderr: string[];
  /** Resolves with the first stdout line matching `pattern` (rejects if the child exits first). */
  line(pattern: RegExp): Promise<RegExpExecArray>;
  readonly exit: Promise<number | null>;
}

const children: Child[] = [];

afterEach(() => {
  for (const c of children.splice(0)) if (c.process.exitCode === null) c.process.kill('SIGKILL');
});

function launch(script: string, args: string[]): Child {
  const child = spawn(process.execPath, [script, ...args], {
    cwd: packageRoot,
    env: { ...process.env, OMNI_BACKEND: '' },
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const events = new EventEmitter();
  createInterface({ input: child.stdout }).on('line', (l) => {
    stdout.push(l);
    events.emit('line', l);
  });
  createInterface({ input: child.stderr }).on('line', (l) => stderr.push(l));
  // 'close', not 'exit': the output pipes may still hold lines at 'exit' (Node's docs), which a
  // check of the last line or of stderr would then miss.
  const exit = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const line = (pattern: RegExp): Promise<RegExpExecArray> =>
    new Promise((resolve, reject) => {
      const seen = stdout.map((l) => pattern.exec(l)).find((m) => m !== null);
      if (seen) return resolve(seen);
      const onLine = (l: string): void => {
        const m = pattern.exec(l);
        if (m) {
          events.off('line', onLine);
          resolve(m);
        }
      };
      events.on('line', onLine);
      void exit.then((code) =>
        reject(
          new Error(`exited ${code} before printing ${pattern}\n${stdout.join('\n')}\n${stderr.join('\n')}`),
        ),
      );
    });
  const c: Child = { process: child, stdout, stderr, line, exit };
  children.push(c);
  return c;
}

const LISTENING = /listening on (http:\/\/127\.0\.0\.1:(\d+)) \(backend (\w+)/;

/** Polls (bounded) until `ready` holds for the text of GET `path`. */
async function until(
  url: string,
  path: string,
  ready: (text: string) => boolean,
  what: string,
): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    const a = await get(url, path);
    if (ready(Buffer.from(a.bytes).toString('utf8'))) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`never saw ${what}`);
}

describe('serve flags', () => {
  it('defaults: loopback, port 8080, 1 thread, 4 requests per thread, no unit ceiling', () => {
    expect(parseServeArgs([])).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      threads: 1,
      requests: 4,
      units: undefined,
      backend: undefined,
      device: undefined,
      deadlineMs: undefined,
      requestTimeoutMs: 300_000,
      sendTimeoutMs: 300_000,
    });
    expect(parseServeArgs(['--threads', '3'])).toMatchObject({ threads: 3, requests: 12 });
    expect(parseServeArgs(['--help'])).toBe('help');
  });

  it.each([
    ['--port', '70000'],
    ['--port', 'http'],
    ['--threads', '0'],
    ['--requests', '1.5'],
    ['--units', '0'],
    ['--backend', 'tpu'],
    ['--device', '-1'],
    ['--device', '1.5'],
    ['--device', '1024'],
    ['--body-limit', '0'],
    ['--deadline-ms', '0'],
    ['--in-features', '0'],
    ['--drain-timeout-ms', 'never'],
    ['--request-timeout-ms', '0'],
    ['--request-timeout-ms', 'never'],
    ['--request-timeout-ms', '1e309'],
    ['--drain-timeout-ms', '-1'],
    ['--send-timeout-ms', '0'],
    ['--send-timeout-ms', 'never'],
    ['--cuda-library', ''],
    ['--fixture-library', ' '],
    ['--frobnicate', '1'],
  ])('%s %s: UsageError', (flag, value) => {
    expect(() => parseServeArgs([flag, value])).toThrow(expect.objectContaining({ code: 'OMNI_ERR_USAGE' }));
  });

  it('--device N is the CUDA device the runtime opens (without it, the runtime picks: OMNI_CUDA_DEVICE, else 0)', async () => {
    expect(parseServeArgs(['--device', '1'])).toMatchObject({ device: 1 });
    const seen: LinearRuntimeOptions[] = [];
    const stop = new OmniError('X_STOP', 'the test stops the start here');
    const startRuntime = async (options: LinearRuntimeOptions): Promise<never> => {
      seen.push(options);
      throw stop;
    };
    const deps = { startRuntime, signals: new EventEmitter() as unknown as NodeJS.Process, out: () => {} };
    await expect(runServeCommand(['--device', '2'], deps)).rejects.toBe(stop);
    await expect(runServeCommand([], deps)).rejects.toBe(stop);
    expect(seen.map((options) => options.device)).toEqual([2, undefined]);
  });

  it('the times take any length, as serve() does; --drain-timeout-ms also 0', () => {
    const long = String(2 ** 31);
    for (const flag of ['--deadline-ms', '--drain-timeout-ms', '--request-timeout-ms', '--send-timeout-ms']) {
      for (const ms of [long, '1e15'])
        expect(() => parseServeArgs([flag, ms]), `${flag} ${ms}`).not.toThrow();
    }
    expect(
      parseServeArgs([
        '--deadline-ms',
        long,
        '--drain-timeout-ms',
        '1e15',
        '--request-timeout-ms',
        long,
        '--send-timeout-ms',
        long,
      ]),
    ).toMatchObject({
      deadlineMs: 2 ** 31,
      drainTimeoutMs: 1e15,
      requestTimeoutMs: 2 ** 31,
      sendTimeoutMs: 2 ** 31,
    });
    expect(parseServeArgs(['--drain-timeout-ms', '0'])).toMatchObject({ drainTimeoutMs: 0 });
  });

  it('a stray argument is a UsageError', () => {
    expect(() => parseServeArgs(['now'])).toThrow(expect.objectContaining({ code: 'OMNI_ERR_USAGE' }));
  });

  it('--cuda-library and --fixture-library name the libraries to load (none by default)', () => {
    expect(parseServeArgs([])).toMatchObject({ libraries: { cuda: undefined, fixture: undefined } });
    expect(
      parseServeArgs(['--cuda-library', '/opt/omni/libomni_cuda.so', '--fixture-library', 'lib/fixture.so']),
    ).toMatchObject({ libraries: { cuda: '/opt/omni/libomni_cuda.so', fixture: 'lib/fixture.so' } });
  });

  it('a library for a backend an explicit --backend will not load is a usage mistake', () => {
    for (const argv of [
      ['--backend', 'fixture', '--cuda-library', 'c.so'],
      ['--backend', 'cuda', '--fixture-library', 'f.so'],
    ]) {
      expect(() => parseServeArgs(argv)).toThrow(expect.objectContaining({ code: 'OMNI_ERR_USAGE' }));
    }
    expect(parseServeArgs(['--backend', 'fixture', '--fixture-library', 'f.so'])).toMatchObject({
      libraries: { cuda: undefined, fixture: 'f.so' },
    });
  });

  it('so is one for the backend OMNI_BACKEND picks, without --backend (serve defaults to auto)', () => {
    expect(() => parseServeArgs(['--cuda-library', 'c.so'], { OMNI_BACKEND: 'fixture' })).toThrow(
      expect.objectContaining({ code: 'OMNI_ERR_USAGE' }),
    );
    expect(() => parseServeArgs(['--fixture-library', 'f.so'], { OMNI_BACKEND: 'cuda' })).toThrow(
      expect.objectContaining({ code: 'OMNI_ERR_USAGE' }),
    );
    expect(parseServeArgs(['--cuda-library', 'c.so'], {})).toMatchObject({ libraries: { cuda: 'c.so' } });
    expect(parseServeArgs(['--cuda-library', 'c.so'], { OMNI_BACKEND: 'auto' })).toMatchObject({
      libraries: { cuda: 'c.so' },
    });
  });

  it('the built CLI: a library that is not there is one coded line on stderr, exit 1', async () => {
    const missing = launch(CLI, [
      'serve',
      '--port',
      '0',
      '--backend',
      'fixture',
      '--fixture-library',
      '/nonexistent/libomni_fixture.so',
    ]);
    expect(await missing.exit).toBe(1);
    expect(missing.stderr).toHaveLength(1);
    expect(missing.stderr[0]).toContain('OMNI_ERR_LIBRARY_NOT_FOUND');
    expect(missing.stdout).toEqual([]);
  });

  it('the built CLI: a bad flag is one line on stderr naming it, exit 2', async () => {
    const bad = launch(CLI, ['serve', '--port', 'http']);
    expect(await bad.exit).toBe(2);
    expect(bad.stderr).toHaveLength(1);
    expect(bad.stderr[0]).toContain('--port');
    expect(bad.stdout).toEqual([]);
  });

  it('the built CLI: SIGTERM while it still loads the HTTP stack stops it without listening, exit 0', async () => {
    const preload = join(packageRoot, 'dist', 'test', 'fixtures', 'sigterm-while-loading.js');
    const child = spawn(process.execPath, ['--import', preload, CLI, 'serve', '--port', '0'], {
      cwd: packageRoot,
      env: { ...process.env, OMNI_BACKEND: 'fixture' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const [code, signal] = await new Promise<[number | null, string | null]>(
      (resolve) => child.once('close', (c, s) => resolve([c, s])), // all its output read: see launch()
    );
    expect(stderr).toContain('sigterm-while-loading: sent');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(stdout).toBe('omni-runtime serve: SIGTERM while starting: stopping\n');
  }, 30_000);

  it('--help prints the usage and resolves 0 without starting anything', async () => {
    const lines: string[] = [];
    expect(await runServeCommand(['--help'], { out: (l) => lines.push(l) })).toBe(0);
    expect(lines.join('\n')).toMatch(/^Usage: omni-runtime serve/);
  });
});

describe('runServeCommand in-process (signals from an EventEmitter)', () => {
  it('a second signal abandons in-flight requests: exit 1', async () => {
    const signals = new EventEmitter();
    const lines: string[] = [];
    let gated: Gated | undefined;
    let announce: (url: string) => void = () => {};
    const listening = new Promise<string>((resolve) => {
      announce = resolve;
    });
    const exitCode = runServeCommand(['--port', '0', '--drain-timeout-ms', '100', '--in-features', '2'], {
      signals: signals as unknown as NodeJS.Process,
      out: (l) => {
        lines.push(l);
        const m = LISTENING.exec(l);
        if (m) announce(m[1]!);
      },
      startRuntime: async (options) => {
        gated = await startGated({ ...options, inFeatures: 2, outFeatures: 2 });
        return gated.lr;
      },
    });
    const url = await listening;
    const stuck = postFloats(url, [1, 2]).then(
      (a) => a.status,
      () => 'connection closed',
    );
    await gated!.reach(ENTERED, 1);
    signals.emit('SIGTERM');
    signals.emit('SIGINT');
    expect(await exitCode).toBe(1);
    expect(lines.some((l) => l.includes('SIGINT again'))).toBe(true);
    expect(gated!.lr.report().state).toBe('stopped');
    expect([503, 'connection closed']).toContain(await stuck);
  });
});

/** runServeCommand in this process over `startRuntime`'s runtime, signals from an EventEmitter. */
function serveInProcess(
  argv: string[],
  startRuntime: (options: LinearRuntimeOptions) => Promise<LinearRuntime>,
) {
  const signals = new EventEmitter();
  const lines: string[] = [];
  const errors: string[] = [];
  const printed = new EventEmitter();
  const line = (pattern: RegExp): Promise<string> =>
    new Promise((resolve) => {
      const seen = lines.find((l) => pattern.test(l));
      if (seen !== undefined) return resolve(seen);
      const onLine = (l: string): void => {
        if (!pattern.test(l)) return;
        printed.off('line', onLine);
        resolve(l);
      };
      printed.on('line', onLine);
    });
  const exitCode = runServeCommand(['--port', '0', ...argv], {
    signals: signals as unknown as NodeJS.Process,
    out: (l) => {
      lines.push(l);
      printed.emit('line', l);
    },
    err: (l) => errors.push(l),
    startRuntime,
  });
  const listening = line(LISTENING).then((l) => LISTENING.exec(l)![1]!);
  return { signals, lines, errors, line, listening, exitCode };
}

describe('--request-timeout-ms', () => {
  it('reaches the server: an upload stalled past it is answered 408 and closed', async () => {
    let gated: Gated | undefined;
    const served = serveInProcess(['--in-features', '4', '--request-timeout-ms', '50'], async () => {
      gated = await startGated({ admission: { requests: 4 }, inFeatures: 4, outFeatures: 2, open: true });
      return gated.lr;
    });
    const url = await served.listening;
    const stalled = await rawExchange(Number(new URL(url).port), [
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
        'Content-Length: 16\r\n\r\n',
      Buffer.alloc(8),
    ]);
    expect(stalled.status).toBe(408);
    expect(JSON.parse(stalled.body)).toMatchObject({ code: 'OMNI_ERR_REQUEST_TIMEOUT' });
    expect(gated!.entered()).toBe(0);
    served.signals.emit('SIGTERM');
    expect(await served.exitCode).toBe(0);
  });
});

describe('--send-timeout-ms', () => {
  it('reaches the server: an answer the client does not read is cut off (444), the rest never sent', async () => {
    let gated: Gated | undefined;
    const served = serveInProcess(['--in-features', '4', '--send-timeout-ms', '50'], async () => {
      // 256 rows of 16,384 floats: a 16 MiB answer, more than the loopback's buffers hold.
      gated = await startGated({
        admission: { requests: 4 },
        inFeatures: 4,
        outFeatures: 16_384,
        open: true,
      });
      return gated.lr;
    });
    const url = await served.listening;
    const client = connect({ host: '127.0.0.1', port: Number(new URL(url).port) });
    client.on('error', () => {});
    client.pause();
    const body = Buffer.alloc(256 * 4 * 4);
    client.write(
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
        `Content-Length: ${body.length}\r\n\r\n`,
    );
    client.write(body);
    const cut = 'omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="444"}';
    await until(url, '/metrics', (text) => sample(text, cut) === 1, 'the answer cut off');
    let received = 0;
    client.on('data', (chunk: Buffer) => {
      received += chunk.length;
    });
    await new Promise((resolve) => {
      client.once('close', resolve);
      client.resume();
    });
    expect(received).toBeLessThan(256 * 16_384 * 4);
    served.signals.emit('SIGTERM');
    expect(await served.exitCode).toBe(0);
  });
});

describe('a runtime that fails behind the command: it logs, drains and exits 1', () => {
  it('a sticky native error: one line on stderr with its code, the answer owed is finished, exit 1', async () => {
    let gated: Gated | undefined;
    const served = serveInProcess(
      ['--threads', '2', '--in-features', '4', '--drain-timeout-ms', '600000'],
      async () => {
        gated = await startGated({
          threads: 2,
          admission: { requests: 4 },
          inFeatures: 4,
          outFeatures: 2,
          open: true,
        });
        return gated.lr;
      },
    );
    const url = await served.listening;
    // One call held on one thread while a call on the other fails the runtime.
    const held = postFloats(url, [HELD_INPUT, 0, 0, 0]);
    await gated!.reach(ENTERED, 1);
    expect((await postFloats(url, [FAIL_FATAL, 0, 0, 0])).status).toBe(500);
    await served.line(/runtime failed: draining/);
    expect(await tryConnect(Number(new URL(url).port))).toBe('ECONNREFUSED');
    // A supervisor's SIGTERM now asks for the drain under way: it is the first, and cuts nothing.
    served.signals.emit('SIGTERM');
    gated!.open(); // lets the held call finish: the drain waited for it
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(floatsOf(answer)).toEqual(expectedRow([HELD_INPUT, 0, 0, 0], 2));
    expect(await served.exitCode).toBe(1);
    expect(served.errors).toHaveLength(1);
    expect(served.errors[0]).toContain('OMNI_ERR_NATIVE');
    expect(served.lines.at(-1)).toMatch(/drained, exiting/);
    expect(gated!.lr.report().state).toBe('stopped');
  });

  it("told by the runtime's whenFailed(): no poll is armed, and none elapses before it drains and exits 1", async () => {
    let gated: Gated | undefined;
    try {
      const served = serveInProcess(['--in-features', '4'], async () => {
        gated = await startGated({ admission: { requests: 4 }, inFeatures: 4, outFeatures: 2, open: true });
        // From here on an interval never fires (the runtime's own are armed already): a failure
        // noticed by polling report() would never be noticed at all.
        vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
        return gated.lr;
      });
      const url = await served.listening;
      expect(vi.getTimerCount()).toBe(0);
      expect((await postFloats(url, [FAIL_FATAL, 0, 0, 0])).status).toBe(500);
      expect(await served.exitCode).toBe(1);
      expect(served.errors).toHaveLength(1);
      expect(served.errors[0]).toContain('OMNI_ERR_NATIVE');
      expect(served.lines.some((l) => /runtime failed: draining/.test(l))).toBe(true);
      expect(gated!.lr.report().state).toBe('stopped');
    } finally {
      vi.useRealTimers();
      await gated?.lr.close({ timeoutMs: 5_000 });
    }
  });

  it('a lost thread whose replacement cannot start, with no request in flight: exit 1', async () => {
    let runtime: Runtime | undefined;
    const served = serveInProcess(['--in-features', '4', '--out-features', '2'], async () => {
      // One thread that starts; its replacement exits in init, leaving the pool without threads.
      const then = 'exit';
      runtime = await Runtime.start({
        worker: builtModuleUrl('test/fixtures/replacement-fails-worker.js'),
        workerData: { loads: new SharedArrayBuffer(8), ok: 1, then },
        admission: { requests: 4 },
      });
      return new LinearRuntime(runtime, { inFeatures: 4, outFeatures: 2, backend: 'fixture' });
    });
    await served.listening;
    // Not an HTTP call: the failure comes from the pool, with nothing for a route to see.
    expect(await codeOf(runtime!.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
    expect(await served.exitCode).toBe(1);
    expect(served.errors).toHaveLength(1);
    expect(served.errors[0]).toContain('OMNI_ERR_WORKER_EXITED');
    expect(runtime!.state).toBe('stopped');
  });

  it('the native fixture with a sticky fault injected: the next call fails it, exit 1', async () => {
    buildFixture();
    let lr: LinearRuntime | undefined;
    const served = serveInProcess(['--in-features', '4', '--out-features', '2'], async (options) => {
      lr = await LinearRuntime.start({ ...options, backend: 'fixture', faultInjection: true });
      return lr;
    });
    const url = await served.listening;
    expect(await lr!.runtime.run({ inject: 'fatal' })).toBeNull();
    const answer = await postFloats(url, [1, 2, 3, 4]);
    expect(answer.status).toBe(500);
    expect(answer.json).toMatchObject({ code: 'OMNI_ERR_NATIVE' });
    expect(await served.exitCode).toBe(1);
    expect(served.errors).toHaveLength(1);
    expect(served.errors[0]).toContain('OMNI_ERR_NATIVE');
    expect(lr!.report().state).toBe('stopped');
  });

  it('a sticky native error in a call a SIGTERM drain waits for: the drain finishes, exit 1', async () => {
    let gated: Gated | undefined;
    const served = serveInProcess(['--in-features', '4', '--drain-timeout-ms', '600000'], async () => {
      gated = await startGated({ admission: { requests: 4 }, inFeatures: 4, outFeatures: 2 });
      return gated.lr;
    });
    const url = await served.listening;
    const fatal = postFloats(url, [FAIL_FATAL, 0, 0, 0]);
    await gated!.reach(ENTERED, 1);
    served.signals.emit('SIGTERM');
    await served.line(/SIGTERM: draining/);
    gated!.open();
    expect((await fatal).status).toBe(500);
    expect(await served.exitCode).toBe(1);
    expect(served.errors).toHaveLength(1);
    expect(served.errors[0]).toContain('OMNI_ERR_NATIVE');
    expect(served.lines.at(-1)).toMatch(/drained, exiting/);
  });
});

describe('serve child processes', () => {
  beforeAll(() => {
    buildFixture();
  });

  it('the built CLI on the native fixture: prints address and backend, answers, drains on SIGTERM under load, exits 0', async () => {
    const IN = 512;
    const OUT = 512;
    const ROWS = 1024;
    const child = launch(CLI, [
      'serve',
      '--port',
      '0',
      '--backend',
      'fixture',
      '--threads',
      '1',
      '--requests',
      '4',
      '--in-features',
      String(IN),
      '--out-features',
      String(OUT),
      // The drain's default 10 s would decide the exit status on a machine stalled that long.
      '--drain-timeout-ms',
      '600000',
    ]);
    const listening = await child.line(LISTENING);
    const [, url, , backend] = listening;
    expect(backend).toBe('fixture');
    // Which .so answers is on the start line, for whoever reads the logs.
    expect(listening.input).toContain(`library ${defaultLibraryPath('fixture')};`);

    const health = await get(url!, '/health');
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ state: 'ready', depth: 0, capacity: 4 });

    // Numerics through HTTP match the double-precision reference of the same seeded weights.
    const x = Array.from({ length: IN }, (_, i) => Math.sin(i) * 0.5);
    const json = await postJson(url!, { rows: [x] });
    expect(json.status).toBe(200);
    const { w, b } = seededWeights(IN, OUT);
    const want = referenceLinearGelu(new Float32Array(x), 1, w, b, OUT, IN);
    const got = (json.json as { rows: number[][] }).rows[0]!;
    for (let j = 0; j < OUT; j++) expect(got[j]).toBeCloseTo(want[j]!, 4);

    // Three large calls, serialized on one thread: wait until all are admitted. Whether one is
    // still running when SIGTERM lands depends on the machine's speed, so this test does not
    // require it; the gated tests below hold calls in flight deterministically.
    const big = new Float32Array(ROWS * IN).fill(0.25);
    const load = [0, 1, 2].map(() => postFloats(url!, big));
    // Awaited below; marked handled now so a failure above does not also report three rejections.
    for (const p of load) p.catch(() => {});
    await until(
      url!,
      '/metrics',
      (t) =>
        (sample(t, 'omni_runtime_depth') ?? Number.NaN) +
          (sample(t, 'omni_runtime_calls_total{outcome="completed"}') ?? Number.NaN) ===
        4,
      'three admitted calls',
    );
    child.process.kill('SIGTERM');
    await child.line(/SIGTERM: draining/);
    expect(await tryConnect(Number(new URL(url!).port))).toBe('ECONNREFUSED');
    const answers = await Promise.all(load);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    for (const a of answers) expect(a.bytes.byteLength).toBe(ROWS * OUT * 4);
    expect(await child.exit).toBe(0);
    expect(child.stdout.at(-1)).toMatch(/drained, exiting/);
  });

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'gated: %s with every call held in flight; all finish 200 after the drain began, exit 0',
    async (signal) => {
      const child = launch(GATED_CLI, [
        '--port',
        '0',
        '--threads',
        '1',
        '--requests',
        '3',
        '--in-features',
        '4',
        '--out-features',
        '2',
        // As above: the drain waits for the calls, whatever the machine's stalls.
        '--drain-timeout-ms',
        '600000',
      ]);
      const [, url] = await child.line(LISTENING);
      const inputs = [0, 1, 2].map((i) => [i, i + 1, i + 2, i + 3]);
      const load = inputs.map((x) => postFloats(url!, x));
      for (const p of load) p.catch(() => {});
      // All three admitted and held (one at the gate, two queued behind it).
      await until(url!, '/health', (t) => (JSON.parse(t) as { depth: number }).depth === 3, 'depth 3');
      child.process.kill(signal);
      await child.line(new RegExp(`${signal}: draining`));
      expect(await tryConnect(Number(new URL(url!).port))).toBe('ECONNREFUSED');
      child.process.stdin.write('open\n');
      const answers = await Promise.all(load);
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
      answers.forEach((a, i) => {
        expect(floatsOf(a)).toEqual(expectedRow(inputs[i]!, 2));
      });
      expect(await child.exit).toBe(0);
      expect(child.stdout.at(-1)).toMatch(/drained, exiting/);
    },
  );

  it('gated: a sticky native error fails the runtime; the process drains and exits 1 on its own', async () => {
    const child = launch(GATED_CLI, ['--port', '0', '--in-features', '4', '--out-features', '2']);
    const [, url] = await child.line(LISTENING);
    child.process.stdin.write('open\n');
    expect((await postFloats(url!, [FAIL_FATAL, 0, 0, 0])).status).toBe(500);
    expect(await child.exit).toBe(1);
    expect(child.stderr).toHaveLength(1);
    expect(child.stderr[0]).toContain('OMNI_ERR_NATIVE');
    expect(child.stdout.at(-1)).toMatch(/drained, exiting/);
  });
});
