/**
 * `omni-runtime bench` listens for SIGINT, SIGTERM and SIGHUP only while it runs: a run that ends, done
 * or failed, takes its listeners off again. One left on `process` would keep a later Ctrl-C in
 * the same process (a test runner, a script driving the command) from ending it, and add one
 * listener a run. cli-bench-interrupted-outputs.test.ts sees them go only after a signal.
 */
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { expect, it, vi } from 'vitest';
import { runBenchCommand } from '../src/cli/bench-command.js';
import { INTERRUPTS } from '../src/cli/bench-interrupt.js';
import type { BenchResult } from '../src/cli/bench-run.js';
import type { ImportPackage } from '../src/cli/chart-libraries.js';
import { benchResult } from './fixtures/bench-result.js';
import { captureOutputPerTest } from './fixtures/capture-output.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-bench-signal-listeners-');

// Kept, not shown: what the run prints is not what this test checks.
captureOutputPerTest();

const notInstalled: ImportPackage = async (name) => {
  throw Object.assign(new Error(`Cannot find package '${name}' imported from /nowhere`), {
    code: 'ERR_MODULE_NOT_FOUND',
  });
};

it.each([
  ['measured', async (): Promise<BenchResult> => benchResult([])],
  [
    'failed',
    async (): Promise<BenchResult> => {
      throw new Error('the load failed');
    },
  ],
] as const)('a run %s: no SIGINT, SIGTERM or SIGHUP listener is left', async (name, load) => {
  const signals = new EventEmitter();
  const raise = vi.fn();
  // One of each while the load runs: "none left" means something only if they were there.
  let during: number[] = [];
  const runBench = (): Promise<BenchResult> => {
    during = INTERRUPTS.map((signal) => signals.listenerCount(signal));
    return load();
  };
  const ran = runBenchCommand(['--json', '--out', join(tempDir(), 'out')], {
    runBench,
    importPackage: notInstalled,
    signals: signals as unknown as NodeJS.Process,
    raise,
  });
  if (name === 'measured') await expect(ran).resolves.toBe(0);
  else await expect(ran).rejects.toThrow('the load failed');
  expect(during).toEqual([1, 1, 1]);
  expect(INTERRUPTS.map((signal) => signals.listenerCount(signal))).toEqual([0, 0, 0]);
  expect(raise).not.toHaveBeenCalled();
});

// On a terminal the bar hides the cursor and puts its own SIGINT and SIGTERM listeners on
// `process`; stop() gives both back, whether the run measured or failed.
it.each([
  ['measured', (): BenchResult => benchResult([])],
  [
    'failed',
    (): BenchResult => {
      throw new Error('the load failed');
    },
  ],
] as const)('a run %s: the progress bar is stopped once the load ends', async (_name, end) => {
  let stop: ReturnType<typeof vi.spyOn> | undefined;
  await runBenchCommand(['--json', '--out', join(tempDir(), 'out')], {
    runBench: async (_config, progress) => {
      stop = vi.spyOn(progress, 'stop');
      return end();
    },
    importPackage: notInstalled,
    signals: new EventEmitter() as unknown as NodeJS.Process,
    raise: vi.fn(),
  }).catch(() => {});
  expect(stop).toHaveBeenCalled();
});
