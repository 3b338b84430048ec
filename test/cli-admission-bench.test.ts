/** `omni-runtime bench admission`: both sides measured and a ratio; its flags' edges; its table. */
import { describe, expect, it } from 'vitest';
import { parseAdmissionBenchArgs, runAdmissionBenchCommand } from '../src/cli/admission-bench-command.js';
import { captureOutput } from './fixtures/capture-output.js';
import { runCli } from './fixtures/cli-process.js';
import { thrownCode } from './fixtures/thrown.js';

interface Side {
  name: string;
  opsPerSec: number;
  rounds: number[];
}

describe('omni-runtime bench admission', () => {
  it.each([[[]], [['--cost', '3']]])('measures admission against raw Atomics %j', async (extra: string[]) => {
    const { code, stdout, stderr } = await runCli([
      ...['bench', 'admission', '--threads', '2', '--duration', '0.4', '--rounds', '1', '--json'],
      ...extra,
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as { threads: number; raw: Side; admission: Side; ratio: number };
    expect(result.threads).toBe(2);
    expect(result.raw.opsPerSec).toBeGreaterThan(0);
    expect(result.admission.opsPerSec).toBeGreaterThan(0);
    expect(result.ratio).toBeCloseTo(result.admission.opsPerSec / result.raw.opsPerSec, 10);
  });
});

describe('bench admission flags', () => {
  // Refused while parsing, before any thread starts. The other flags are tiny, so that were one
  // of these taken, the test would cost a short run, not a benchmark.
  const tiny = ['--threads', '1', '--rounds', '1', '--duration', '0.01'];
  it.each([
    ['--threads', '65'],
    ['--cost', '1048577'],
    ['--rounds', '101'],
    // Not request-only: --cost 0 would silently measure something other than what was asked.
    ['--cost', '0'],
    ['--rounds', '0'],
    ['--duration', '0'],
  ])('%s %s is a usage mistake', async (flag, value) => {
    // The tiny pairs less the one of the flag under test (a flag given twice is its own mistake).
    const argv = [...tiny.filter((_, i, a) => a[i - (i % 2)] !== flag), flag, value];
    await expect(runAdmissionBenchCommand(argv)).rejects.toMatchObject({ code: 'OMNI_ERR_USAGE' });
  });
});

// Parsed only: were the mistake taken, the command would run for as long as it says.
describe('bench admission flags, parsed', () => {
  it('--duration takes up to 3600 s, not more', () => {
    expect(parseAdmissionBenchArgs(['--duration', '3600'])).toMatchObject({ durationS: 3600 });
    expect(thrownCode(() => parseAdmissionBenchArgs(['--duration', '3601']))).toBe('OMNI_ERR_USAGE');
  });

  it('takes no positional argument', () => {
    expect(thrownCode(() => parseAdmissionBenchArgs(['sideways']))).toBe('OMNI_ERR_USAGE');
  });
});

/** Runs the command in-process and returns what it printed. */
async function table(argv: string[]): Promise<string> {
  const output = captureOutput();
  try {
    expect(await runAdmissionBenchCommand(argv)).toBe(0);
    return output.stdout;
  } finally {
    output.restore();
  }
}

describe('the bench admission table', () => {
  it('says how long a short round runs, to three figures, not 0.00 s', async () => {
    const text = await table(['--threads', '1', '--rounds', '1', '--duration', '0.003']);
    expect(text.split('\n')[0]).toContain('1 round(s) x 0.002 s per side');
  });

  it.each([
    [['--threads', '2'], 2, '0.7'],
    [['--threads', '1', '--cost', '3'], 1, '0.8'],
  ])('%j: per-thread ns from pairs/s, the ratio of the two, its target', async (extra, threads, target) => {
    const text = await table([...extra, '--rounds', '1', '--duration', '0.2']);
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toContain(
      `${threads} thread(s) contending on one shared word, 1 round(s) x 0.100 s per side`,
    );
    const rows = lines.slice(2, 5).map((l) => l.trim().split(/\s{2,}/));
    expect(rows[0]).toEqual(['case', 'pairs/s (median)', 'ns/pair per thread', 'vs raw']);
    const [raw, ours] = rows.slice(1).map(([name, pairs, ns, vs]) => ({
      name: name!,
      pairs: Number(pairs!.replaceAll(',', '')),
      ns: Number(ns),
      vs: Number(vs),
    }));
    // The pairs are printed rounded to a whole number: the unrounded figure the other columns
    // come from lies within half a pair of it. A fixed tolerance on what is derived from it held
    // only for millions of pairs/s; a round in which a thread hardly ran (a busy machine) prints
    // thousands, where half a pair moves the nanoseconds by more than their printed tenth.
    const within = (x: number, lo: number, hi: number, printed: number): void => {
      expect(x).toBeGreaterThanOrEqual(lo - printed);
      expect(x).toBeLessThanOrEqual(hi + printed);
    };
    for (const side of [raw!, ours!]) {
      expect(side.pairs).toBeGreaterThan(0);
      // Nanoseconds one thread spends on one pair: threads x 1e9 / pairs per second (printed to
      // a tenth).
      within(side.ns, (threads * 1e9) / (side.pairs + 0.5), (threads * 1e9) / (side.pairs - 0.5), 0.051);
    }
    expect(raw!.vs).toBe(1);
    // The ratio of the unrounded pairs/s, printed to a hundredth.
    within(
      ours!.vs,
      (ours!.pairs - 0.5) / (raw!.pairs + 0.5),
      (ours!.pairs + 0.5) / (raw!.pairs - 0.5),
      0.0051,
    );
    expect(lines.at(-1)).toBe(
      `ratio ${ours!.vs.toFixed(2)} (admission pairs/s / raw pairs/s; target >= ${target})`,
    );
  });
});
