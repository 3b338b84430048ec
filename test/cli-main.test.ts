/** The command line's dispatch, in-process: help and version, exit codes, one-line errors. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ADMISSION_HELP } from '../src/cli/admission-bench-command.js';
import { UsageError } from '../src/cli/args.js';
import { BENCH_HELP } from '../src/cli/bench-options.js';
import { errorLine, exitCodeFor, HELP, main } from '../src/cli/main.js';
import { SERVE_HELP } from '../src/cli/serve-command.js';
import { packageRoot } from '../src/paths.js';
import { captureOutput } from './fixtures/capture-output.js';

const version = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string })
  .version;

/** Runs main() and returns its exit code and what it wrote on stdout. */
async function run(argv: string[]): Promise<{ code: number; stdout: string }> {
  const output = captureOutput();
  try {
    const code = await main(argv);
    return { code, stdout: output.stdout };
  } finally {
    output.restore();
  }
}

describe('main', () => {
  it.each([['-v'], ['--version']])('%s prints the package version, exits 0', async (flag) => {
    expect(await run([flag])).toEqual({ code: 0, stdout: `${version}\n` });
  });

  // node:util reads `-vv` as -v -v, and a repeated boolean flag loses nothing (a command's
  // `--json --json` is fine): `-vv` said "unknown option '-vv'" (exit 2), `-v -v` and
  // `--version -v` "takes no arguments", though every letter named a known flag.
  it.each([[['-vv']], [['-vvv']], [['-v', '-v']], [['--version', '-vv']], [['-v', '--version']]])(
    '%j prints the package version too, exits 0',
    async (argv) => {
      expect(await run(argv)).toEqual({ code: 0, stdout: `${version}\n` });
    },
  );

  it.each([[[]], [['help']], [['-h']], [['--help']]])('%j prints the help, exits 0', async (argv) => {
    expect(await run(argv)).toEqual({ code: 0, stdout: HELP });
  });

  // `help --help` asked for help twice; it was refused as 'help takes a command, got --help'.
  it.each([[['help', '--help']], [['--help', '-h']], [['-h', '-h']], [['help', '-h']]])(
    '%j prints the help too, exits 0',
    async (argv) => {
      expect(await run(argv)).toEqual({ code: 0, stdout: HELP });
    },
  );

  it.each([
    [['help', '-h', 'serve'], SERVE_HELP],
    [['--help', '--help', 'bench', 'admission'], ADMISSION_HELP],
    [['help', 'bench'], BENCH_HELP],
    [['--help', 'bench', 'admission'], ADMISSION_HELP],
    [['-h', 'serve'], SERVE_HELP],
  ])("%j prints that command's help, exits 0", async (argv, help) => {
    expect(await run(argv)).toEqual({ code: 0, stdout: help });
  });

  // docs/limits.md: a -h or --help before any `--` prints help whatever else the line holds; at the top
  // level `--version --help` exited 2 ('--version takes no arguments') and `--help --version`
  // too ('--help takes a command').
  it.each([
    [['--version', '--help']],
    [['-v', '-h']],
    [['--help', '--version']],
    [['-h', '-v']],
    [['--frobnicate', '--help']],
  ])('%j: help wins over the other top-level flags, exits 0', async (argv) => {
    expect(await run(argv)).toEqual({ code: 0, stdout: HELP });
  });

  // `bench -h admission` printed bench's help: the line names the admission subcommand, whose
  // help `bench admission -h` and `help bench admission` print.
  it.each([
    [['bench', '-h', 'admission'], ADMISSION_HELP],
    [['bench', '--help', 'admission', '--threads', '2'], ADMISSION_HELP],
    [['bench', '--json', '-h', 'admission'], ADMISSION_HELP],
    [['-v', '-h', 'serve'], SERVE_HELP],
    [['--help', '--json', 'bench'], BENCH_HELP],
    // Here 'admission' is --out's value (a folder), not the subcommand.
    [['bench', '--out', 'admission', '-h'], BENCH_HELP],
    [['help', 'bench', '--out', 'admission'], BENCH_HELP],
    // The help asked for stands before the `--`: it was handed on after the line's own `--`,
    // where it is an argument ('bench: unknown subcommand or argument', exit 2).
    [['-h', 'bench', '--', '--frob'], BENCH_HELP],
    [['help', 'serve', '--'], SERVE_HELP],
    [['--help', 'bench', 'admission', '--', 'x'], ADMISSION_HELP],
  ])('%j: the help of the command the line names, wherever -h stands', async (argv, help) => {
    expect(await run(argv)).toEqual({ code: 0, stdout: help });
  });

  // A short-flag group holding h (`-jh`, node:util reads it as -j -h) asks for help as -h does:
  // `bench -jh` exited 2 ('unknown option -j') while `bench -j -h` printed bench's help, and
  // `-vh` ('unknown option -vh') while `-v -h` printed the top-level one.
  it.each([
    [['-vh'], HELP],
    [['-hv'], HELP],
    [['-xh', 'serve'], SERVE_HELP],
    [['bench', '-jh'], BENCH_HELP],
    [['bench', '-hj'], BENCH_HELP],
    [['bench', '--json', '-hh'], BENCH_HELP],
    [['bench', '-jh', 'admission'], ADMISSION_HELP],
    [['bench', 'admission', '-jh'], ADMISSION_HELP],
    [['serve', '-ph'], SERVE_HELP],
    [['help', 'serve', '-ph'], SERVE_HELP],
  ])('%j: a short-flag group holding h prints the help of the command the line names', async (argv, help) => {
    const { code, stdout } = await run(argv);
    expect(code).toBe(0);
    expect(stdout.split('\n')[0]).toBe(help.split('\n')[0]);
  });

  // The usage line is `omni-runtime: <command>: <problem> (see --help)`; a flag's value check
  // printed no command (`omni-runtime: --threads must be ...`), so `bench admission --threads 0`
  // did not say which command's --threads was wrong.
  it.each([
    [['bench', '--threads', '0'], 'bench'],
    [['bench', 'admission', '--threads', '0'], 'bench admission'],
    [['bench', '--rates', '1x', '--rates', '2x'], 'bench'],
    [['bench', 'sideways'], 'bench'],
    [['serve', '--port', '-1'], 'serve'],
    [['serve', '--backend', 'cuda', '--fixture-library', 'f.so'], 'serve'],
  ])('%j: the usage line names the command once', async (argv, command) => {
    const err = await main(argv).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as UsageError).code).toBe('OMNI_ERR_USAGE');
    expect((err as UsageError).command).toBe(command);
    const line = errorLine(err);
    expect(line.startsWith(`omni-runtime: ${command}: `)).toBe(true);
    expect(line.slice(`omni-runtime: ${command}: `.length).startsWith(`${command}:`)).toBe(false);
    expect(line.endsWith(' (see --help)')).toBe(true);
  });

  // serve listens for SIGTERM and SIGINT before it loads; one left on `process` after it
  // returns or throws would keep a later signal in the same process from ending it.
  it.each([
    [['serve', '--help'], 'OMNI_OK'],
    [['serve', '--port', '-1'], 'OMNI_ERR_USAGE'],
  ])('%j: no SIGTERM or SIGINT listener of serve is left once it ends', async (argv, ended) => {
    const before = [process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')];
    // Its own listeners, put on `process`: "none left" means something only if they were there.
    const on = vi.spyOn(process, 'on');
    try {
      const code = await run(argv).then(
        () => 'OMNI_OK',
        (err: unknown) => (err as UsageError).code,
      );
      expect(code).toBe(ended);
      const added = on.mock.calls.map(([event]) => event).filter((e) => e === 'SIGTERM' || e === 'SIGINT');
      expect(added).toEqual(['SIGTERM', 'SIGINT']);
    } finally {
      on.mockRestore();
    }
    expect([process.listenerCount('SIGTERM'), process.listenerCount('SIGINT')]).toEqual(before);
  });

  it('an unknown command or flag, or an argument help or version does not take, is a usage mistake (exit 2); anything else exits 1', async () => {
    for (const argv of [
      ['frobnicate'],
      ['--frobnicate'],
      ['--version', 'extra'],
      ['-vv', 'extra'],
      ['-v', '-vx'],
      ['-v', '--frobnicate'],
      ['help', 'me'],
      // docs/limits.md: a -h after `--` is not asking for help.
      ['--', '--help'],
      ['-v', '--', '-h'],
      // Nor is it asking for the admission subcommand's help (which comes right after bench).
      ['bench', '--json', 'admission', '--', '-h'],
      // A group holding h after `--` is an argument too; a group without h is no help.
      ['bench', '--', '-jh'],
      ['-v', '--', '-vh'],
      ['bench', '-jk'],
      // '-1h' is --duration's (negative) value here, not a group holding h.
      ['bench', '--duration', '-1h', 'admission'],
      ['bench', '--frobnicate', '--duration', '-1h'],
    ]) {
      const err = await main(argv).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(UsageError);
      expect((err as UsageError).code).toBe('OMNI_ERR_USAGE');
      expect(exitCodeFor(err)).toBe(2);
    }
    expect(exitCodeFor(new Error('boom'))).toBe(1);
  });
});

describe('errorLine', () => {
  it('is one line, whatever the message holds', () => {
    const line = errorLine(Object.assign(new Error('first\n  second\tthird\n'), { code: 'OMNI_ERR_X' }));
    expect(line.split('\n')).toHaveLength(1);
    expect(line).not.toMatch(/\s{2}|\t/);
    expect(errorLine(new UsageError('a\nb')).split('\n')).toHaveLength(1);
    expect(errorLine('a plain string').split('\n')).toHaveLength(1);
  });

  it('gives a usage mistake its message and the pointer to --help, without its code', () => {
    expect(errorLine(new UsageError('--duration must be a number > 0, got "0"'))).toBe(
      'omni-runtime: --duration must be a number > 0, got "0" (see --help)',
    );
  });
});
