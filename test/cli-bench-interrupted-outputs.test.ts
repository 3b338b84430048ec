/**
 * What an interrupted `omni-runtime bench` leaves, at the points a child process cannot be
 * stopped at on cue: a folder that existed is kept as it was, and a signal while the charts load
 * (results.json already written, whole) keeps that file and its folder and says so on stderr.
 * In-process, with the signals from an emitter and the process's end replaced by a record of it.
 */
import { EventEmitter } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { runBenchCommand } from '../src/cli/bench-command.js';
import type { BenchResult } from '../src/cli/bench-run.js';
import type { ImportPackage } from '../src/cli/chart-libraries.js';
import { benchResult } from './fixtures/bench-result.js';
import { captureOutputPerTest } from './fixtures/capture-output.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-bench-interrupted-outputs-');

const output = captureOutputPerTest();

const notInstalled = (name: string): Error =>
  Object.assign(new Error(`Cannot find package '${name}' imported from /nowhere`), {
    code: 'ERR_MODULE_NOT_FOUND',
  });

/** What the process would have shown when the signal ended it. */
interface Ended {
  signal: string;
  stdout: string;
  stderr: string;
  files: string[];
}

/**
 * Runs the command; `interruptAt` is where the signal comes: while the load runs, or while the
 * chart packages load (after results.json is written). Resolves once the command settles, with
 * what the process showed when the signal would have ended it.
 */
async function interrupted(out: string, interruptAt: 'load' | 'charts', signal: string): Promise<Ended> {
  const signals = new EventEmitter();
  let ended: Ended | undefined;
  const raise = (name: string): void => {
    ended ??= {
      signal: name,
      stdout: output.stdout,
      stderr: output.stderr,
      files: existsSync(out) ? readdirSync(out).sort() : [],
    };
  };
  const runBench = async (): Promise<BenchResult> => {
    if (interruptAt === 'load') signals.emit(signal);
    return benchResult([]);
  };
  const importPackage: ImportPackage = async (name) => {
    if (interruptAt === 'charts') signals.emit(signal);
    throw notInstalled(name);
  };
  // In a real run the signal ends the process; here the command goes on to its end, unwatched.
  await runBenchCommand(['--json', '--out', out], {
    runBench,
    importPackage,
    signals: signals as unknown as NodeJS.Process,
    raise,
  }).catch(() => {});
  expect(signals.eventNames()).toEqual([]);
  return ended!;
}

it('SIGTERM while the load runs: a folder that existed is kept, empty; nothing on stdout', async () => {
  const out = join(tempDir(), 'existing');
  mkdirSync(out);
  const ended = await interrupted(out, 'load', 'SIGTERM');
  expect(ended).toEqual({
    signal: 'SIGTERM',
    stdout: '',
    stderr: 'omni-runtime: bench: interrupted by SIGTERM; nothing written\n',
    files: [],
  });
  expect(existsSync(out)).toBe(true);
});

it('SIGINT while the charts load: results.json is kept whole in the folder it made, and named', async () => {
  const out = join(tempDir(), 'made');
  const ended = await interrupted(out, 'charts', 'SIGINT');
  expect(ended).toEqual({
    signal: 'SIGINT',
    stdout: '',
    stderr: `omni-runtime: bench: interrupted by SIGINT; written: ${join(out, 'results.json')} (the charts not)\n`,
    files: ['results.json'],
  });
  expect(JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'))).toEqual(benchResult([]));
});
