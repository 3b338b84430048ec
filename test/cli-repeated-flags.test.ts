/**
 * A value flag given twice: the first value would be dropped without a word (`--rates 1x
 * --rates 4x` measures only 4x), so every command refuses it as a usage mistake.
 */
import { describe, expect, it } from 'vitest';
import { runAdmissionBenchCommand } from '../src/cli/admission-bench-command.js';
import { parseFlags } from '../src/cli/args.js';
import { parseBenchArgs } from '../src/cli/bench-options.js';
import { parseServeArgs } from '../src/cli/serve-command.js';
import { runCli } from './fixtures/cli-process.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-repeated-');

const FLAGS = { rate: { type: 'string' }, json: { type: 'boolean' } } as const;

function usageCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return undefined;
}

describe('a value flag given twice', () => {
  it.each([
    ['two spaced values', ['--rate', '1', '--rate', '2']],
    ['= and spaced', ['--rate=1', '--rate', '2']],
    ['the same value twice', ['--rate', '1', '--rate', '1']],
    ['an empty value first', ['--rate=', '--rate', '2']],
    ['a negative value second', ['--rate', '1', '--rate', '-2']],
  ])('%s: OMNI_ERR_USAGE', (_what, argv) => {
    expect(usageCode(() => parseFlags('test', argv, FLAGS))).toBe('OMNI_ERR_USAGE');
  });

  it('a value flag once and a repeated boolean are fine (a second --json loses nothing)', () => {
    expect(parseFlags('test', ['--rate', '1', '--json', '--json'], FLAGS).values).toEqual({
      rate: '1',
      json: true,
    });
  });

  it('bench refuses a repeated --rates instead of measuring the last one only', () => {
    expect(usageCode(() => parseBenchArgs(['--rates', '1x', '--rates', '4x'], {}))).toBe('OMNI_ERR_USAGE');
    // --help still wins, as it does over any other bad value.
    expect(parseBenchArgs(['--rates', '1x', '--rates', '4x', '--help'], {})).toBe('help');
  });

  it('bench admission and serve refuse one too (their flags go through the same parser)', async () => {
    // Tiny values: were the repeat taken, this would be a 20 ms run, not a hang.
    const admission = runAdmissionBenchCommand(['--duration', '0.01', '--duration', '0.02', '--rounds', '1']);
    await expect(admission).rejects.toMatchObject({ code: 'OMNI_ERR_USAGE' });
    expect(usageCode(() => parseServeArgs(['--port', '0', '--port', '8080']))).toBe('OMNI_ERR_USAGE');
  });

  it('on the command line: exit 2, one line naming the flag', async () => {
    // Short enough that a regression costs a second, not a benchmark.
    const args = [
      ...['bench', '--duration', '0.02', '--duration', '0.04'],
      ...['--calibrate', '0.01', '--rates', '20'],
    ];
    const { code, stdout, stderr } = await runCli([...args, '--out', tempDir()]);
    expect(code, stderr).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(stderr).toContain('--duration');
  });
});
