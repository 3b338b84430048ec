/**
 * Edges of the command line the other tests left unguarded (found by changing the code on
 * purpose and seeing which changes no test noticed): inclusive flag bounds, rate keys, the
 * report's number formatting, which signal is named, and the exit status of a signal during
 * start. In-process only, on the parsers, the report formatter, ShutdownSignals and
 * runServeCommand (signals from an EventEmitter, the gated fixture worker as the runtime);
 * ordered by events, never by sleeps.
 */
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { parseBenchArgs } from '../src/cli/bench-options.js';
import { formatTable } from '../src/cli/bench-report.js';
import { failureLine } from '../src/cli/failure-watch.js';
import { parseServeArgs, runServeCommand } from '../src/cli/serve-command.js';
import { ShutdownSignals } from '../src/cli/shutdown-signals.js';
import { MAX_DEVICE } from '../src/native/device.js';
import { benchPhase, benchResult } from './fixtures/bench-result.js';
import { codeOf } from './fixtures/runtime-harness.js';
import { FAIL_FATAL } from './fixtures/serve-gate-layout.js';
import { type Gated, startGated } from './fixtures/serve-harness.js';
import { thrown, thrownCode } from './fixtures/thrown.js';

const gates: Gated[] = [];
afterEach(async () => {
  for (const g of gates.splice(0)) {
    g.open();
    await g.lr.close();
  }
});

describe('bench flags', () => {
  // Kills: rateListFlag's duplicate key without the 'x' ('2' and '2x' would be one rate).
  it('--rates 2,2x are two loads (absolute and relative), not one listed twice', () => {
    const config = parseBenchArgs(['--rates', '2,2x'], {});
    expect(config).not.toBe('help');
    expect(config !== 'help' && config.rates).toEqual([
      { value: 2, relative: false },
      { value: 2, relative: true },
    ]);
  });

  // Two spellings of one double were refused by the number read: `--rates 1e-400,2e-400` as
  // listing 5e-324 twice, a number the user never typed.
  it.each([
    ['1e-400,2e-400', ['1e-400', '2e-400'], '5e-324'],
    ['250, 250.0', ['250', '250.0'], undefined],
    ['2x,2.0X', ['2x', '2.0X'], undefined],
    ['7,7', ['7'], undefined],
  ])('--rates %j is one rate twice, said as typed', (rates, typed, notTyped) => {
    // The message is what is tested here: which numbers it names.
    const { code, message } = thrown(() => parseBenchArgs(['--rates', rates], {}));
    expect(code).toBe('OMNI_ERR_USAGE');
    for (const text of typed) expect(message).toContain(text);
    if (notTyped !== undefined) expect(message).not.toContain(notTyped);
  });
});

describe('serve flags', () => {
  // Kills: a stray word after `serve` taken silently (only a second one refused).
  it('takes no positional argument', () => {
    expect(thrownCode(() => parseServeArgs(['sideways'], {}))).toBe('OMNI_ERR_USAGE');
  });

  // Kills: --device's minimum 0 turned into 1 (device 0 is the default one).
  it('--device takes 0 to MAX_DEVICE', () => {
    for (const device of [0, MAX_DEVICE]) {
      const config = parseServeArgs(['--device', String(device)], {});
      expect(config !== 'help' && config.device).toBe(device);
    }
    expect(thrownCode(() => parseServeArgs(['--device', String(MAX_DEVICE + 1)], {}))).toBe('OMNI_ERR_USAGE');
  });

  // Kills: the environment left out of the library flags' check (serve's default is then auto).
  it('a library for the backend OMNI_BACKEND picks against is a usage mistake; --backend overrides it', () => {
    expect(thrownCode(() => parseServeArgs(['--cuda-library', 'c.so'], { OMNI_BACKEND: 'fixture' }))).toBe(
      'OMNI_ERR_USAGE',
    );
    const config = parseServeArgs(['--backend', 'auto', '--cuda-library', 'c.so'], {
      OMNI_BACKEND: 'fixture',
    });
    expect(config !== 'help' && config.libraries.cuda).toBe('c.so');
  });

  // Kills: --retry-after's inclusive minimum 0 turned into 1.
  it('--retry-after 0 is accepted (serve() takes 0 too)', () => {
    const config = parseServeArgs(['--retry-after', '0'], {});
    expect(config !== 'help' && config.retryAfterSeconds).toBe(0);
  });

  // serve took a deadline of 1 ms or more only, while bench's --deadline-ms, serve()'s
  // deadlineMs and the x-omni-deadline-ms header take any number of milliseconds > 0.
  it('--deadline-ms takes a fraction of a millisecond, as bench and x-omni-deadline-ms do', () => {
    const config = parseServeArgs(['--deadline-ms', '0.5'], {});
    expect(config !== 'help' && config.deadlineMs).toBe(0.5);
    const bench = parseBenchArgs(['--deadline-ms', '0.5'], {});
    expect(bench !== 'help' && bench.deadlineMs).toBe(0.5);
    expect(thrownCode(() => parseServeArgs(['--deadline-ms', '0'], {}))).toBe('OMNI_ERR_USAGE');
  });

  // `-0` passed the range checks of the flags whose minimum is 0 and was handed on as -0 (toBe
  // tells it from 0). It is 0; where the minimum is 1 (or above 0) it stays refused.
  it('--port, --retry-after and --drain-timeout-ms -0 are 0; --threads -0 is refused', () => {
    const config = parseServeArgs(['--port', '-0', '--retry-after', '-0', '--drain-timeout-ms', '-0'], {});
    expect(config !== 'help' && config.port).toBe(0);
    expect(config !== 'help' && config.retryAfterSeconds).toBe(0);
    expect(config !== 'help' && config.drainTimeoutMs).toBe(0);
    for (const flag of [
      '--threads',
      '--requests',
      '--units',
      '--request-timeout-ms',
      '--send-timeout-ms',
      '--deadline-ms',
    ]) {
      expect(
        thrownCode(() => parseServeArgs([flag, '-0'], {})),
        flag,
      ).toBe('OMNI_ERR_USAGE');
    }
  });

  it('--port 80.0000000000000001 is not port 80 (Number() would round the fraction away); 8e1 is', () => {
    expect(thrownCode(() => parseServeArgs(['--port', '80.0000000000000001'], {}))).toBe('OMNI_ERR_USAGE');
    expect(thrownCode(() => parseServeArgs(['--retry-after', '1e-400'], {}))).toBe('OMNI_ERR_USAGE');
    const config = parseServeArgs(['--port', '8e1'], {});
    expect(config !== 'help' && config.port).toBe(80);
  });

  // The range serve()'s drainTimeoutMs takes, as Runtime.close's timeout: 0 abandons the work in
  // flight at once (what a second signal does to a longer drain), a fraction is a length.
  it.each([
    ['0', 0],
    ['0.5', 0.5],
  ])('--drain-timeout-ms %s is taken as serve() takes it', (value, ms) => {
    const config = parseServeArgs(['--drain-timeout-ms', value], {});
    expect(config !== 'help' && config.drainTimeoutMs).toBe(ms);
    expect(thrownCode(() => parseServeArgs(['--drain-timeout-ms', '-1'], {}))).toBe('OMNI_ERR_USAGE');
  });

  // 0 is not "no timeout" here (node:http reads its 0 so), nor is it in serve(); a fraction is.
  it('--request-timeout-ms and --send-timeout-ms take any number > 0, as serve() does', () => {
    expect(thrownCode(() => parseServeArgs(['--request-timeout-ms', '0'], {}))).toBe('OMNI_ERR_USAGE');
    expect(thrownCode(() => parseServeArgs(['--send-timeout-ms', '0'], {}))).toBe('OMNI_ERR_USAGE');
    const config = parseServeArgs(['--request-timeout-ms', '0.5', '--send-timeout-ms', '0.5'], {});
    expect(config !== 'help' && [config.requestTimeoutMs, config.sendTimeoutMs]).toEqual([0.5, 0.5]);
  });
});

describe('the bench table', () => {
  // Kills: ms()'s `x >= 100` turned into `x > 100` (100 ms would show as 100.0: four figures).
  it('shows latencies of exactly 100, 10 and 1 ms with three significant figures', () => {
    const p = benchPhase({ latencyMs: { count: 10, p50: 1, p99: 10, p999: 100, max: 100, mean: 5 } });
    const row = formatTable(benchResult([p]))
      .split('\n')[1]!
      .trim()
      .split(/\s{2,}/);
    expect(row.slice(4, 7)).toEqual(['1.00', '10.0', '100']);
  });
});

describe('ShutdownSignals', () => {
  // Kills: `received` naming the latest signal instead of the first.
  it('received names the first signal, whatever came after it', () => {
    const source = new EventEmitter();
    const signals = new ShutdownSignals(source as unknown as NodeJS.Process);
    source.emit('SIGTERM');
    source.emit('SIGINT');
    expect(signals.received).toBe('SIGTERM');
    signals.dispose();
  });

  // Kills: onAgain dropping a second signal that came before its handler was set (a second
  // Ctrl-C while serve was still starting).
  it('onAgain hears a second signal that came before it, at once; never the first', () => {
    const source = new EventEmitter();
    const signals = new ShutdownSignals(source as unknown as NodeJS.Process);
    const again: string[] = [];
    source.emit('SIGTERM');
    signals.onAgain((name) => again.push(name));
    expect(again).toEqual([]);
    source.emit('SIGINT');
    const lateSource = new EventEmitter();
    const late = new ShutdownSignals(lateSource as unknown as NodeJS.Process);
    lateSource.emit('SIGINT');
    lateSource.emit('SIGTERM');
    const lateAgain: string[] = [];
    late.onAgain((name) => lateAgain.push(name));
    expect([again, lateAgain]).toEqual([['SIGINT'], ['SIGTERM']]);
    signals.dispose();
    late.dispose();
  });
});

describe('runServeCommand', () => {
  // Kills: `return closed.clean ? 0 : 1` of a signal while starting turned into `return 0`.
  it('a signal while starting, then a runtime close that abandoned work: exit 1', async () => {
    const signals = new EventEmitter();
    const lines: string[] = [];
    let closedWith: unknown;
    const exitCode = await runServeCommand(['--port', '0', '--in-features', '2', '--drain-timeout-ms', '7'], {
      signals: signals as unknown as NodeJS.Process,
      out: (l) => lines.push(l),
      startRuntime: async (given) => {
        signals.emit('SIGTERM');
        const g = await startGated({ ...given, inFeatures: 2, outFeatures: 2, open: true });
        gates.push(g);
        // The real runtime, but its close says it abandoned work (as after a stuck native call).
        return Object.assign(Object.create(g.lr) as typeof g.lr, {
          close: async (options?: { timeoutMs?: number }) => {
            closedWith = options;
            await g.lr.close(options);
            return { clean: false, abandoned: 1 };
          },
        });
      },
    });
    expect(lines).toEqual(['omni-runtime serve: SIGTERM while starting: stopping']);
    expect(closedWith).toEqual({ timeoutMs: 7 });
    expect(exitCode).toBe(1);
  });

  // A runtime that failed while the command started (a sticky native error) and a signal then:
  // the close of a failed runtime is clean (nothing is outstanding), and the stop exited 0 with
  // nothing on stderr, while a failure after listening exits 1 with its line.
  it('a signal while starting and a runtime that failed by then: its line on stderr, exit 1', async () => {
    const signals = new EventEmitter();
    const lines: string[] = [];
    const errors: string[] = [];
    let gated: Gated | undefined;
    const exitCode = await runServeCommand(['--port', '0', '--in-features', '2'], {
      signals: signals as unknown as NodeJS.Process,
      out: (l) => lines.push(l),
      err: (l) => errors.push(l),
      startRuntime: async (given) => {
        gated = await startGated({ ...given, inFeatures: 2, outFeatures: 2, open: true });
        gates.push(gated);
        expect(await codeOf(gated.lr.run(new Float32Array([FAIL_FATAL, 0])))).toBe('OMNI_ERR_NATIVE');
        expect(gated.lr.report().state).toBe('failed');
        signals.emit('SIGTERM');
        return gated.lr;
      },
    });
    expect(lines).toEqual(['omni-runtime serve: SIGTERM while starting: stopping']);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^omni-runtime serve: the runtime failed: OMNI_ERR_NATIVE: /);
    expect(exitCode).toBe(1);
    expect(gated!.lr.report().state).toBe('stopped');
  });

  // A runtime without a Runtime under it (ServeCommandDeps lets an embedder pass one) says it
  // failed only through report(), as the failure watch reads it after listening (exit 1 then):
  // a signal while starting closed it and exited 0, since only `runtime.failure` was read.
  it('a signal while starting and a runtime whose report() says failed, with no Runtime under it: exit 1', async () => {
    const signals = new EventEmitter();
    const lines: string[] = [];
    const errors: string[] = [];
    const exitCode = await runServeCommand(['--port', '0', '--in-features', '2'], {
      signals: signals as unknown as NodeJS.Process,
      out: (l) => lines.push(l),
      err: (l) => errors.push(l),
      startRuntime: async (given) => {
        const g = await startGated({ ...given, inFeatures: 2, outFeatures: 2, open: true });
        gates.push(g);
        expect(await codeOf(g.lr.run(new Float32Array([FAIL_FATAL, 0])))).toBe('OMNI_ERR_NATIVE');
        signals.emit('SIGTERM');
        const lr = g.lr;
        return {
          run: (input, options) => lr.run(input, options),
          report: () => lr.report(),
          close: (options) => lr.close(options),
          inFeatures: lr.inFeatures,
          outFeatures: lr.outFeatures,
          backend: lr.backend,
        };
      },
    });
    expect(lines).toEqual(['omni-runtime serve: SIGTERM while starting: stopping']);
    expect(errors).toEqual([failureLine(undefined)]);
    expect(exitCode).toBe(1);
  });
});
