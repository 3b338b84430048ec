/**
 * The command line's failure contract: a mistake on the command line is ONE line on stderr
 * that names it, exit code 2, nothing on stdout and never a stack trace; --help exits 0.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { errorLine, exitCodeFor, main } from '../src/cli/main.js';
import { captureOutput } from './fixtures/capture-output.js';
import { CLI, runCli } from './fixtures/cli-process.js';

const scratch = mkdtempSync(join(tmpdir(), 'omni-cli-errors-'));
const aFile = join(scratch, 'a-regular-file');
writeFileSync(aFile, 'not a folder\n');
// A usable folder in which an output name is taken by a folder: refused before the run.
const blockedOut = join(scratch, 'blocked-out');
mkdirSync(join(blockedOut, 'latency.svg'), { recursive: true });
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// A line rejected only after calibration (a multiple of capacity that floods the heap) is
// checked in-process, on a calibration that reports a fixed capacity: the real one counts the
// completions of a stretch of wall time, and a process the machine did not run through it
// counted none, so the run failed (OMNI_ERR_BENCH, exit 1) before the rates were resolved
// (forced: a 1.5 s stall). What is checked here begins after calibration.
vi.mock(import('../src/cli/load-generator.js'), async (importOriginal) => ({
  ...(await importOriginal()),
  calibrate: async (_lr, _work, _seed, seconds, concurrency) => ({
    seconds,
    concurrency,
    completed: 750,
    calls: 1000,
    capacity: 1000,
  }),
}));

const cases: Array<[string, string[], string]> = [
  ['an unknown command', ['frobnicate'], 'frobnicate'],
  ['an unknown top-level flag', ['--frobnicate'], '--frobnicate'],
  ['an unknown bench subcommand', ['bench', 'sideways'], 'sideways'],
  ['an unknown flag', ['bench', '--frobnicate'], '--frobnicate'],
  ['a negative duration', ['bench', '--duration', '-1'], '--duration'],
  ['a negative duration (= form)', ['bench', '--duration=-1'], '--duration'],
  ['a zero duration', ['bench', '--duration', '0'], '--duration'],
  ['a flag without its value', ['bench', '--duration'], '--duration'],
  ['rates that are not numbers', ['bench', '--rates', 'fast,slow'], '--rates'],
  ['an empty rate', ['bench', '--rates', '100,,200'], '--rates'],
  ['a negative rate', ['bench', '--rates', '100,-2x'], '--rates'],
  ['a fractional thread count', ['bench', '--threads', '1.5'], '--threads'],
  ['an unknown backend', ['bench', '--backend', 'tpu'], '--backend'],
  ['a deadline that is not a number', ['bench', '--deadline-ms', 'soon'], '--deadline-ms'],
  ['an output folder under a regular file', ['bench', '--out', join(aFile, 'results')], '--out'],
  ['an empty output folder', ['bench', '--out', ''], '--out'],
  ['an output file name taken by a folder', ['bench', '--out', blockedOut], 'latency.svg'],
  ['an unknown admission bench flag', ['bench', 'admission', '--frobnicate'], '--frobnicate'],
  ['zero admission bench threads', ['bench', 'admission', '--threads', '0'], '--threads'],
  ['a negative admission bench cost', ['bench', 'admission', '--cost', '-3'], '--cost'],
  ['a hexadecimal number', ['bench', '--duration', '0x10'], '--duration'],
  ['a hexadecimal rate', ['bench', '--rates', '0x10'], '--rates'],
  [
    'a flag whose value is missing before the next flag',
    ['bench', '--duration', '--rates', '1x'],
    '--duration',
  ],
  [
    'more rows per request than the unit ceiling',
    ['bench', '--max-rows', '100', '--units', '50'],
    '--max-rows',
  ],
  [
    'bounds that cannot share one word',
    ['bench', '--requests', '1024', '--units', `${2 ** 53 - 1}`],
    '--units',
  ],
  [
    'serve bounds that cannot share one word',
    ['serve', '--requests', '1024', '--units', `${2 ** 53 - 1}`],
    '--units',
  ],
  ['a rate that would flood the heap', ['bench', '--rates', '1e8', '--duration', '0.2'], '--rates'],
];

describe.concurrent('command line errors', () => {
  it.each(cases)('%s: one line naming it, exit 2', async (_what, args, named) => {
    const { code, stdout, stderr } = await runCli(args);
    expect(code, stderr).toBe(2);
    expect(stdout).toBe('');
    const lines = stderr.trimEnd().split('\n');
    expect(lines, stderr).toHaveLength(1);
    expect(lines[0]).toContain(named);
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(stderr).not.toMatch(/Error:|node:internal/);
  });

  it('writes nothing under the output folder of a rejected command line', async () => {
    const out = join(scratch, 'never-made');
    const { code } = await runCli(['bench', '--rates', 'x', '--out', out]);
    expect(code).toBe(2);
    expect(existsSync(out)).toBe(false);
  });

  const helps: string[][] = [
    [],
    ['--help'],
    ['-h'],
    ['bench', '--help'],
    ['bench', 'admission', '--help'],
    ['serve', '--help'],
  ];
  it.each(helps.map((args) => [args.join(' ') || '(no arguments)', args] as const))(
    '%s prints help, exits 0',
    async (_, args) => {
      const { code, stdout, stderr } = await runCli(args);
      expect(code).toBe(0);
      expect(stderr).toBe('');
      expect(stdout).toMatch(/usage/i);
    },
  );
});

describe('a line rejected only after calibration: a multiple of capacity that would flood the heap', () => {
  const flood = ['bench', '--rates', '1e9x', '--duration', '1', '--in-features', '8', '--out-features', '8'];

  it('is a usage mistake naming --rates (one line, exit 2), with nothing on stdout', async () => {
    const output = captureOutput();
    let thrown: unknown;
    try {
      await main([...flood, '--out', join(scratch, 'flood')]);
    } catch (err) {
      thrown = err;
    } finally {
      output.restore();
    }
    expect(thrown).toMatchObject({ code: 'OMNI_ERR_USAGE' });
    expect(exitCodeFor(thrown)).toBe(2);
    expect(errorLine(thrown)).toContain('--rates');
    expect(errorLine(thrown).split('\n')).toHaveLength(1);
    expect(output.stdout).toBe('');
  });

  it('leaves no output folder of its own behind', async () => {
    const out = join(scratch, 'made-then-rejected', 'results');
    await expect(main([...flood, '--out', out])).rejects.toMatchObject({ code: 'OMNI_ERR_USAGE' });
    expect(existsSync(join(scratch, 'made-then-rejected'))).toBe(false);
  });
});

describe('a reader that leaves early (| head, a pager quit)', () => {
  it('is not a failure: no stack trace, exit 0', async () => {
    const child = spawn(process.execPath, [CLI, '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // gone before the CLI writes its help: EPIPE
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const [code] = (await once(child, 'close')) as [number | null];
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});

describe('errorLine', () => {
  it('names the code once: before the message, unless the message already names it', () => {
    const system = Object.assign(new Error('listen EADDRINUSE: address already in use 127.0.0.1:80'), {
      code: 'EADDRINUSE',
    });
    expect(errorLine(system)).toBe('omni-runtime: listen EADDRINUSE: address already in use 127.0.0.1:80');
    const ours = Object.assign(new Error('native library not found'), { code: 'OMNI_ERR_LIBRARY_NOT_FOUND' });
    expect(errorLine(ours)).toBe('omni-runtime: OMNI_ERR_LIBRARY_NOT_FOUND: native library not found');
  });
});
