/** `omni-runtime bench` flags and the seeded arrival process, in-process (no child processes). */
import { describe, expect, it } from 'vitest';
import { parseFlags, UsageError } from '../src/cli/args.js';
import { type BenchConfig, parseBenchArgs, rateListFlag } from '../src/cli/bench-options.js';
import { type Arrival, ArrivalProcess } from '../src/cli/prng.js';
import { parseServeArgs } from '../src/cli/serve-command.js';

function config(argv: string[], env: NodeJS.ProcessEnv = {}): BenchConfig {
  const parsed = parseBenchArgs(argv, env);
  if (parsed === 'help') throw new Error('unexpected help');
  return parsed;
}

function schedule(seed: number, rate: number, count: number, maxRows = 16): Arrival[] {
  const arrivals = new ArrivalProcess(seed, rate, maxRows);
  return Array.from({ length: count }, () => arrivals.next());
}

describe('bench flags', () => {
  it('defaults: 20 s over 4 rates x 2 modes, relative rates, the fixture backend', () => {
    const c = config([]);
    expect(c.durationS).toBe(20);
    expect(c.phaseS).toBe(2.5);
    expect(c.rates).toEqual(['0.5', '1', '2', '4'].map((v) => ({ value: Number(v), relative: true })));
    expect(c.backend).toBe('fixture');
    expect(c.backendIsDefault).toBe(true);
    expect(config(['--backend', 'fixture']).backendIsDefault).toBe(false);
    expect(c.requests).toBe(8 * c.threads);
    expect(c.units).toBe(8 * c.requests);
    expect(c.deadlineMs).toBe(1000);
  });

  it('keeps the default --max-rows within a small --units (and --requests 1 runs as is)', () => {
    expect(config(['--requests', '1'])).toMatchObject({ requests: 1, units: 8, maxRows: 8 });
    expect(config(['--units', '4'])).toMatchObject({ units: 4, maxRows: 4 });
    expect(config([])).toMatchObject({ maxRows: 16 });
    expect(() => config(['--units', '4', '--max-rows', '5'])).toThrow(
      expect.objectContaining({ code: 'OMNI_ERR_USAGE' }),
    );
  });

  it('--cuda-library and --fixture-library name the libraries to load (none by default)', () => {
    expect(config([]).libraries).toEqual({ cuda: undefined, fixture: undefined });
    const both = ['--cuda-library', '/opt/omni/libomni_cuda.so', '--fixture-library', 'f.so'];
    expect(config(['--backend', 'auto', ...both]).libraries).toEqual({
      cuda: '/opt/omni/libomni_cuda.so',
      fixture: 'f.so',
    });
    expect(config(['--fixture-library', 'f.so']).libraries).toEqual({ cuda: undefined, fixture: 'f.so' });
    expect(config(['--backend', 'cuda', '--cuda-library', 'c.so']).libraries).toEqual({
      cuda: 'c.so',
      fixture: undefined,
    });
    for (const flag of ['--cuda-library', '--fixture-library']) {
      expect(() => config(['--backend', 'auto', flag, ' '])).toThrow(
        expect.objectContaining({ code: 'OMNI_ERR_USAGE' }),
      );
    }
  });

  it('--device N names the CUDA device (none by default: the runtime then takes OMNI_CUDA_DEVICE, else 0)', () => {
    expect(config([]).device).toBeUndefined();
    expect(config(['--device', '2']).device).toBe(2);
    for (const value of ['-1', '1.5', '1024', 'gpu1']) {
      expect(() => config(['--device', value])).toThrow(expect.objectContaining({ code: 'OMNI_ERR_USAGE' }));
    }
  });

  it("a library for a backend bench will not load is a usage mistake, not ignored (bench's default is the fixture)", () => {
    for (const argv of [
      ['--cuda-library', 'c.so'],
      ['--backend', 'fixture', '--cuda-library', 'c.so'],
      ['--backend', 'cuda', '--fixture-library', 'f.so'],
    ]) {
      expect(() => config(argv)).toThrow(expect.objectContaining({ code: 'OMNI_ERR_USAGE' }));
    }
    expect(() => config(['--cuda-library', 'c.so'])).toThrow(/--backend cuda or auto/);
    // With OMNI_BACKEND set and no --backend, the environment picks the backend at start.
    expect(config(['--cuda-library', 'c.so'], { OMNI_BACKEND: 'cuda' }).libraries.cuda).toBe('c.so');
    expect(config(['--fixture-library', 'f.so'], { OMNI_BACKEND: ' auto ' }).libraries.fixture).toBe('f.so');
  });

  it('a library for the backend OMNI_BACKEND picks against is a usage mistake too; --backend overrides it', () => {
    for (const [argv, env] of [
      [['--cuda-library', 'c.so'], { OMNI_BACKEND: 'fixture' }],
      [['--fixture-library', 'f.so'], { OMNI_BACKEND: ' cuda ' }],
    ] as const) {
      expect(() => config([...argv], env)).toThrow(expect.objectContaining({ code: 'OMNI_ERR_USAGE' }));
    }
    expect(
      config(['--backend', 'cuda', '--cuda-library', 'c.so'], { OMNI_BACKEND: 'fixture' }).libraries.cuda,
    ).toBe('c.so');
    // A value that names no backend is start's to refuse (coded), not a usage mistake here.
    expect(config(['--cuda-library', 'c.so'], { OMNI_BACKEND: 'gpu' }).libraries.cuda).toBe('c.so');
  });

  it('leaves the backend to OMNI_BACKEND when it is set and --backend is not; blank is unset', () => {
    expect(config([], { OMNI_BACKEND: 'cuda' })).toMatchObject({
      backend: undefined,
      backendIsDefault: false,
    });
    expect(config(['--backend', 'auto'], { OMNI_BACKEND: 'cuda' }).backend).toBe('auto');
    // Blank: selection reads it as unset (auto), so bench keeps its own default.
    expect(config([], { OMNI_BACKEND: '  ' }).backend).toBe('fixture');
  });

  it('parses absolute and relative rates; rejects anything else with a UsageError', () => {
    expect(rateListFlag('250,2x, 0.5X')).toEqual([
      { value: 250, relative: false },
      { value: 2, relative: true },
      { value: 0.5, relative: true },
    ]);
    // Blanks around a multiple too ('--rates "1x, 2x "'): the x is found in the trimmed part.
    expect(rateListFlag(' 1x , 2X ')).toEqual([
      { value: 1, relative: true },
      { value: 2, relative: true },
    ]);
    // Number() takes hexadecimal, binary and octal too: '0x10' would offer 16 requests/s.
    for (const bad of ['', 'x', 'fast', '1,,2', '-1', '0x', 'Infinity', '2xx', '0x10', '0b11x', '0o7']) {
      expect(() => rateListFlag(bad), bad).toThrow(UsageError);
    }
    // Decimal, but too large for a double: Infinity requests/s, or Infinity x capacity.
    for (const bad of ['1e400', '1e400x']) expect(() => rateListFlag(bad), bad).toThrow(UsageError);
  });

  it('returns help for --help and -h', () => {
    expect(parseBenchArgs(['--help'])).toBe('help');
    expect(parseBenchArgs(['-h', '--duration', 'nonsense'])).toBe('help');
  });

  // It won over a bad value or a stray argument, but not over a mistake node:util's parser
  // finds itself: `bench --frobnicate --help` exited 2 telling the user to see --help.
  it.each([
    ['an unknown flag', ['--frobnicate', '--help'], ['--duration', '1', '--help']],
    ['an unknown flag after -h', ['-h', '--frobnicate'], ['-h', '--frobnicate']],
    ['a flag that lacks its value', ['--duration', '--help'], ['--port', '-h']],
    ['a value for a boolean flag', ['--json=1', '-h'], ['--help=1', '-h']],
  ])('--help wins over %s too', (_what, bench, serve) => {
    expect(parseBenchArgs(bench, {})).toBe('help');
    expect(parseServeArgs(serve, {})).toBe('help');
  });

  // No command has a short flag that takes a value today; one that does must keep its value
  // (node:util reads `-oh` as -o h), not turn the group into a help request.
  it('a short-flag group asks for help only where h comes before a letter that takes a value', () => {
    const options = { out: { type: 'string', short: 'o' }, help: { type: 'boolean', short: 'h' } } as const;
    expect(parseFlags('x', ['-oh'], options).values).toEqual({ out: 'h' });
    expect(parseFlags('x', ['-ho'], options).values.help).toBe(true);
    expect(parseFlags('x', ['-zho'], options).values.help).toBe(true);
    expect(() => parseFlags('x', ['-zoh'], options)).toThrow(
      expect.objectContaining({ code: 'OMNI_ERR_USAGE' }),
    );
  });

  it('a --help after -- is an argument, not help', () => {
    expect(() => parseBenchArgs(['--frobnicate', '--', '--help'], {})).toThrow(
      expect.objectContaining({ code: 'OMNI_ERR_USAGE' }),
    );
    expect(() => parseBenchArgs(['--', '--help'], {})).toThrow(
      expect.objectContaining({ code: 'OMNI_ERR_USAGE' }),
    );
  });

  // node:util says the two apart ("argument missing", "argument is ambiguous"); the user made
  // one mistake, told as the CLI tells the others, naming the flag.
  it('a value flag without its value: one mistake, whether the line ends or a flag follows', () => {
    const mistake = (argv: string[]): UsageError => {
      try {
        config(argv);
      } catch (err) {
        expect(err).toBeInstanceOf(UsageError);
        return err as UsageError;
      }
      throw new Error('no usage mistake');
    };
    const atEnd = mistake(['--duration']);
    const beforeFlag = mistake(['--duration', '--json']);
    expect(atEnd.code).toBe('OMNI_ERR_USAGE');
    expect(beforeFlag.message).toBe(atEnd.message);
    expect(atEnd.message.startsWith('--duration ')).toBe(true);
  });

  it('gives negative numbers to their flag, so the error names the flag', () => {
    // '-.5' too: a value that starts '-.' is a number, not a flag that took the value's place.
    for (const [flag, value] of [
      ['--duration', '-1'],
      ['--seed', '-1'],
      ['--duration', '-.5'],
    ] as const) {
      let err: unknown;
      try {
        config([flag, value]);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UsageError);
      expect((err as UsageError).code).toBe('OMNI_ERR_USAGE');
      // The one line a user sees must name the flag (the issue asks for exactly that).
      expect((err as UsageError).message.startsWith(`${flag} `)).toBe(true);
      // And the value's own mistake, as `--flag=value` says it, not a missing value.
      expect(() => config([`${flag}=${value}`])).toThrow((err as UsageError).message);
    }
  });
});

describe('the arrival process', () => {
  it('repeats for a seed and differs between seeds', () => {
    expect(schedule(7, 500, 1000)).toEqual(schedule(7, 500, 1000));
    expect(schedule(8, 500, 1000)).not.toEqual(schedule(7, 500, 1000));
  });

  it('has exponential gaps with mean 1/rate and rows uniform in 1..maxRows', () => {
    const n = 50_000;
    const arrivals = schedule(3, 2000, n);
    const meanGapMs = arrivals.at(-1)!.at / n;
    // The seed fixes the draws: 1 % is room for them, and too little for a rate off by 2.4 %
    // (gaps of 1024 / rate ms).
    expect(meanGapMs).toBeGreaterThan(0.5 * 0.99);
    expect(meanGapMs).toBeLessThan(0.5 * 1.01);
    const counts = new Map<number, number>();
    for (const a of arrivals) counts.set(a.rows, (counts.get(a.rows) ?? 0) + 1);
    expect([...counts.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    for (const count of counts.values()) expect(Math.abs(count - n / 16)).toBeLessThan(0.1 * (n / 16));
    // Exponential: about e^-1 of the gaps exceed the mean.
    let longer = 0;
    let previous = 0;
    for (const a of arrivals) {
      if (a.at - previous > 0.5) longer++;
      previous = a.at;
    }
    expect(longer / n).toBeCloseTo(Math.exp(-1), 1);
  });
});
