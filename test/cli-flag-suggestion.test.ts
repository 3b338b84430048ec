/**
 * A misspelt flag or command names what was probably meant, as a misspelt option key does in
 * the library ("did you mean threads?"): a newcomer typing `--thread` or the library's
 * camelCase `--deadlineMs` learns the flag from the one line, not from the whole --help. The
 * line stays one usage mistake (exit 2); a word near no flag gets no guess.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from './fixtures/cli-process.js';

const suggested: Array<[string, string[], string]> = [
  [
    'a flag missing a letter',
    ['bench', '--thread', '2'],
    "unknown option '--thread' (did you mean --threads?)",
  ],
  [
    "the library's camelCase name",
    ['bench', '--deadlineMs', '500'],
    "unknown option '--deadlineMs' (did you mean --deadline-ms?)",
  ],
  ['a flag with an = value', ['serve', '--prot=8081'], "unknown option '--prot' (did you mean --port?)"],
  [
    'an admission bench flag',
    ['bench', 'admission', '--cots', '3'],
    "unknown option '--cots' (did you mean --cost?)",
  ],
  ['a top-level flag', ['--verison'], "unknown option '--verison' (did you mean --version?)"],
  // As a command's flag with an = value is named without it (above).
  [
    'a top-level flag with an = value',
    ['--verison=1'],
    "unknown option '--verison' (did you mean --version?)",
  ],
  ['a command', ['server'], "unknown command 'server' (did you mean serve? commands: bench, serve)"],
  [
    'a bench subcommand',
    ['bench', 'admision'],
    "unknown subcommand or argument 'admision' (did you mean admission?)",
  ],
];

describe.concurrent('a misspelt flag or command', () => {
  it.each(suggested)('%s: one line that names the likely one, exit 2', async (_what, args, line) => {
    const { code, stdout, stderr } = await runCli(args);
    expect(code, stderr).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trimEnd().split('\n'), stderr).toHaveLength(1);
    expect(stderr).toContain(line);
  });

  it.each([
    ['a flag near none', ['bench', '--frobnicate']],
    ['a command near none', ['frobnicate']],
  ])('%s: no guess', async (_what, args) => {
    const { code, stderr } = await runCli(args);
    expect(code, stderr).toBe(2);
    expect(stderr).not.toContain('did you mean');
  });

  // Not misspelt: said as a command's own flag given a value is (`serve --help=1`), never
  // "unknown option '--version=1' (did you mean --version?)".
  it.each([
    [['--version=1'], 'omni-runtime: --version takes no value (see --help)'],
    [['--help='], 'omni-runtime: --help takes no value (see --help)'],
    [['serve', '--help=1'], 'omni-runtime: serve: --help takes no value (see --help)'],
    [['-v=1'], 'omni-runtime: -v takes no value (see --help)'],
  ])('%j: the flag takes no value, exit 2', async (args, line) => {
    const { code, stdout, stderr } = await runCli(args);
    expect(code, stderr).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trimEnd()).toBe(line);
  });

  // A short flag at the top level is named as node:util names a command's (`bench -x=1` says
  // '-x'): a group of one-letter flags, the first unknown letter named, never its `=value`.
  it.each([
    [['-x=1'], '-x'],
    [['-x='], '-x'],
    [['-xy=1'], '-x'],
    [['-vx'], '-x'],
    [['-=1'], '-='],
    [['-1'], '-1'],
    // No letter at all: the dash itself, never '-undefined'.
    [['-'], '-'],
  ])('%j: unknown option %s, exit 2', async (args, flag) => {
    const { code, stdout, stderr } = await runCli(args);
    expect(code, stderr).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trimEnd()).toBe(`omni-runtime: unknown option '${flag}' (see --help)`);
  });
});
