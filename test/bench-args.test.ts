/**
 * The developer benches refuse a bad command line before measuring anything: one line on
 * stderr naming the argument and what it takes, exit 2 (the CLI's usage status). Before, a
 * non-numeric count ran transfer-sweep for a while and failed on "median of no values", a
 * fractional or extra argument ran silently, and serve.bench's flag mistakes were stack traces.
 * The built scripts run as a user runs them; a refused line ends at import, so each is quick.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BenchHelp, countArg, positiveArg, readBenchArgs } from '../bench/lib/args.js';
import { packageRoot } from '../src/paths.js';

interface Ended {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function runBench(script: string, args: readonly string[]): Promise<Ended> {
  return new Promise((resolve) => {
    const file = join(packageRoot, 'dist', 'bench', `${script}.js`);
    // The bound only stops a bench that went on to measure; what is asserted is how it ended.
    execFile(
      process.execPath,
      [file, ...args],
      { cwd: packageRoot, timeout: 60_000 },
      (err, stdout, stderr) => {
        const status = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
        resolve({ status, stdout, stderr });
      },
    );
  });
}

describe('developer benches: a bad argument', () => {
  const cases: [script: string, args: string[], names: string][] = [
    ['transfer-sweep.bench', ['x'], 'rounds must be an integer >= 1, got "x"'],
    ['transfer-sweep.bench', ['20', '0'], 'calls must be an integer >= 1, got "0"'],
    ['transfer-sweep.bench', ['2.5'], 'rounds must be an integer >= 1, got "2.5"'],
    ['transfer-sweep.bench', ['1', '1', '1'], "takes at most 2 arguments, got '1'"],
    ['runtime.bench', ['-3'], 'rounds must be an integer >= 1, got "-3"'],
    ['runtime.bench', ['9', 'fast'], 'msPerRound must be a finite number > 0, got "fast"'],
    ['runtime.bench', ['--rounds', '3'], "unknown option '--rounds'"],
    ['admission.bench', ['--verbose'], "unknown option '--verbose'"],
    ['movable-merge.bench', ['8'], 'k:m,... must be comma-separated k:m pairs'],
    ['admission.bench', ['3'], "takes no arguments, got '3'"],
    ['claim-reclaim.bench', ['3'], "takes no arguments, got '3'"],
    ['claim-search.bench', ['3'], "takes no arguments, got '3'"],
    ['arrival-batching.bench', ['3'], "takes no arguments, got '3'"],
    ['native.bench', ['3'], "takes no arguments, got '3'"],
    ['serve.bench', ['--rows', '0'], '--rows must be an integer from 1 to 1024, got "0"'],
    ['serve.bench', ['5'], "takes flags only, got '5'"],
    ['serve-clients', ['--connections', 'many'], '--connections must be an integer'],
    // A bench of flags names what it takes after an unknown one too, as the others do.
    [
      'serve.bench',
      ['--bogus'],
      "unknown option '--bogus' (usage: node dist/bench/serve.bench.js [--duration S]",
    ],
    [
      'serve-clients',
      ['--kinds', 'json'],
      "unknown option '--kinds' (did you mean --kind?) (usage: node dist/bench/serve-clients.js",
    ],
  ];

  it('is refused up front: one line naming it, exit 2, nothing measured', async () => {
    for (const [script, args, names] of cases) {
      const ended = await runBench(script, args);
      expect({ script, args, ...ended }).toMatchObject({ script, args, status: 2, stdout: '' });
      const lines = ended.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`${script}: ${names}`);
    }
  }, 120_000);
});

describe('developer benches: --help', () => {
  const usages: [script: string, args: string[], usage: string][] = [
    ['admission.bench', ['--help'], ''],
    ['claim-reclaim.bench', ['-h'], ''],
    ['claim-search.bench', ['--help'], ''],
    ['arrival-batching.bench', ['-h'], ''],
    ['native.bench', ['--help'], ''],
    ['movable-merge.bench', ['--help'], ' [k:m,...]'],
    ['runtime.bench', ['3', '--help'], ' [rounds] [msPerRound]'],
    ['transfer-sweep.bench', ['-h'], ' [rounds] [calls]'],
    ['serve.bench', ['--rows', '0', '--help'], ' [--duration S] [--requests N] [--rows N] [--threads N]'],
    ['serve-clients', ['-h'], ' [--kind idle|silent|upload|unread|json] [--connections N]'],
  ];

  it('prints the usage line on stdout and exits 0 without measuring, wherever it stands', async () => {
    for (const [script, args, usage] of usages) {
      const ended = await runBench(script, args);
      const line = `usage: node dist/bench/${script}.js${usage}\n`;
      expect({ script, ...ended }).toEqual({ script, status: 0, stdout: line, stderr: '' });
    }
  }, 120_000);
});

describe('readBenchArgs', () => {
  const specs = [countArg('rounds', 20), positiveArg('ms', 200)] as const;
  const usage = expect.objectContaining({ code: 'OMNI_ERR_USAGE' });

  it('gives the defaults for missing arguments and reads decimal ones', () => {
    expect(readBenchArgs('b', [], specs)).toEqual([20, 200]);
    expect(readBenchArgs('b', ['2e1', '0.5'], specs)).toEqual([20, 0.5]);
    expect(readBenchArgs('b', ['3'], specs)).toEqual([3, 200]);
    // The least a count takes is one it takes.
    expect(readBenchArgs('b', ['1'], specs)).toEqual([1, 200]);
    expect(readBenchArgs('b', ['0'], [countArg('warmup', 5, 0)])).toEqual([0]);
  });

  it('answers --help or -h with the usage line, before any other mistake', () => {
    for (const argv of [['--help'], ['-h'], ['x', '--help'], ['1', '2', '3', '-h']]) {
      expect(() => readBenchArgs('b', argv, specs)).toThrow(
        new BenchHelp('node dist/bench/b.js [rounds] [ms]'),
      );
    }
  });

  it('names an option as unknown: no bench takes one', () => {
    expect(() => readBenchArgs('b', ['--rounds', '3'], specs)).toThrow(usage);
    expect(() => readBenchArgs('b', ['--rounds', '3'], specs)).toThrow(/unknown option '--rounds'/);
  });

  it.each([['0x10'], [''], ['1e400'], ['1.0000000000000001'], ['9007199254740993'], ['-0']])(
    'refuses %j as a count',
    (raw) => {
      expect(() => readBenchArgs('b', [raw], specs)).toThrow(usage);
    },
  );

  it.each([['0'], ['-1'], ['1e400'], ['1e-400x'], ['Infinity']])('refuses %j as a time', (raw) => {
    expect(() => readBenchArgs('b', ['1', raw], specs)).toThrow(usage);
  });
});
