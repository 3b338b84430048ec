/**
 * Randomized command lines for `bench` and `serve`, parsed in-process: every flag of both
 * commands (and flags of the other one, unknown ones, `--`, stray words, -h/--help, short-flag
 * groups holding h), spaced and `=` forms, with values legal, at and past their bounds,
 * negative, fractional, in other bases, blank, unicode and long. Each line must be help, a UsageError (OMNI_ERR_USAGE, one line on
 * the terminal), or a configuration in which every number flag holds the value written (-0 as 0). A
 * fixed seed and run count (printed) make a failure reproducible.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../src/cli/args.js';
import { parseBenchArgs } from '../src/cli/bench-options.js';
import { errorLine } from '../src/cli/main.js';
import { parseServeArgs } from '../src/cli/serve-command.js';
import { isDecimal, isWholeDecimal, positiveDecimal } from '../src/decimal.js';

const SEED = Number(process.env.CLI_FUZZ_SEED ?? 20261201);
const RUNS = Number(process.env.CLI_FUZZ_RUNS ?? 3000);

/** Number flags: the configuration field each sets, and whether it takes whole numbers only. */
type NumberFlags = Record<string, readonly [field: string, integer: boolean]>;
const COMMON: NumberFlags = {
  threads: ['threads', true],
  requests: ['requests', true],
  units: ['units', true],
  'deadline-ms': ['deadlineMs', false],
  'in-features': ['inFeatures', true],
  'out-features': ['outFeatures', true],
};
const BENCH_NUMBERS: NumberFlags = {
  ...COMMON,
  duration: ['durationS', false],
  calibrate: ['calibrateS', false],
  seed: ['seed', true],
  'max-rows': ['maxRows', true],
};
const SERVE_NUMBERS: NumberFlags = {
  ...COMMON,
  port: ['port', true],
  'body-limit': ['bodyLimit', true],
  'drain-timeout-ms': ['drainTimeoutMs', false],
  'request-timeout-ms': ['requestTimeoutMs', false],
  'send-timeout-ms': ['sendTimeoutMs', false],
  'retry-after': ['retryAfterSeconds', true],
};
const OTHER = ['rates', 'backend', 'cuda-library', 'fixture-library', 'out', 'host'];
const BENCH_VALUES = [
  ...Object.keys(BENCH_NUMBERS),
  'rates',
  'backend',
  'cuda-library',
  'fixture-library',
  'out',
];
const SERVE_VALUES = [...Object.keys(SERVE_NUMBERS), 'host', 'backend', 'cuda-library', 'fixture-library'];

const value = fc.oneof(
  fc.constantFrom(
    ...['0', '1', '2', '8', '16', '256', '257', '1024', '16384', '16385', '65535', '65536', '65537'],
    ...['86400', '86401', '2147483647', '2147483648', '4294967295', '4294967296', '9007199254740993'],
    ...['-1', '-0', '-.5', '0.5', '1.5', '.5', '5.', '1e3', '1E3', '2.5e1', '1e-3', '1e400', '1e-400'],
    ...['1.0000000000000001', '0x10', '0b11', '0o7', 'NaN', 'Infinity', '-Infinity', '', ' ', ' 4 '],
    ...['\t4\n', '\u00a04', '４', '٣', '1_000', '1,000', '+4', '++4', '-e5', '-', '--', '-h', '--help'],
    ...['-xh', '-1h', '-h=1'],
    ...['4x', '0.5x', '2X', '1x,2x', '100,200', '1x,1X', 'x', 'fixture', 'cuda', 'auto', 'tpu', 'a.so'],
    ...['é', '😀', '--json', '--frobnicate'],
  ),
  fc.integer({ min: -5, max: 70_000 }).map(String),
  fc.double().map(String),
  fc.string({ maxLength: 6 }),
  fc.string({ minLength: 200, maxLength: 300 }),
);

const argv = (flags: readonly string[]) =>
  fc
    .array(
      fc.oneof(
        { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...flags), value).map(([f, v]) => [`--${f}`, v]) },
        { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...flags), value).map(([f, v]) => [`--${f}=${v}`]) },
        { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...OTHER), value).map(([f, v]) => [`--${f}`, v]) },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            ['--json'],
            ['--json=1'],
            ['--frobnicate'],
            ['--'],
            ['extra'],
            ['admission'],
            ['-x'],
            ['-h'],
            ['--help'],
            ['-jh'],
            ['-hj'],
          ),
        },
      ),
      { maxLength: 5 },
    )
    .map((tokens) => tokens.flat());

/** Whether node:util would read a -h/--help (alone or in a group of letters): one before any `--`. */
function asksHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  const help = (a: string): boolean => a === '--help' || (/^-[A-Za-z]+$/.test(a) && a.includes('h'));
  return (end === -1 ? args : args.slice(0, end)).some(help);
}

/** Each number flag's value as written, where the line gives it (spaced or with =). */
function writtenNumbers(args: readonly string[], numbers: NumberFlags): Array<[string, string]> {
  const written: Array<[string, string]> = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') break;
    const inline = /^--([\w-]+)=(.*)$/s.exec(arg);
    if (inline && numbers[inline[1]!]) written.push([inline[1]!, inline[2]!]);
    else if (arg.startsWith('--') && numbers[arg.slice(2)] && i + 1 < args.length) {
      written.push([arg.slice(2), args[i + 1]!]);
      i++;
    }
  }
  return written;
}

function check(
  parse: (args: string[], env: NodeJS.ProcessEnv) => object | 'help',
  numbers: NumberFlags,
  args: string[],
): void {
  let parsed: object | 'help';
  try {
    parsed = parse(args, {});
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).code).toBe('OMNI_ERR_USAGE');
    expect(asksHelp(args)).toBe(false);
    expect(errorLine(err)).not.toMatch(/\n/);
    return;
  }
  expect(parsed === 'help').toBe(asksHelp(args));
  if (parsed === 'help') return;
  for (const [flag, text] of writtenNumbers(args, numbers)) {
    const [field, integer] = numbers[flag]!;
    expect(isDecimal(text), `--${flag} ${JSON.stringify(text)}`).toBe(true);
    if (integer) expect(isWholeDecimal(text), `--${flag} ${JSON.stringify(text)}`).toBe(true);
    // -0 as 0 (toBe tells them apart): a flag whose range holds 0 hands on 0, never -0. Text
    // that Number() reads as 0 but names a number > 0 ('1e-400') is the least there is, on
    // every flag that takes it (a time), as x-omni-deadline-ms reads it.
    const written = Number(text);
    const least = positiveDecimal(text) === undefined ? 0 : Number.MIN_VALUE;
    expect((parsed as Record<string, unknown>)[field]).toBe(written === 0 ? least : written);
  }
}

describe(`random command lines (seed ${SEED}, ${RUNS} runs each)`, () => {
  it('bench: help, a usage mistake, or every number as written', () => {
    fc.assert(
      fc.property(argv(BENCH_VALUES), (args) => check(parseBenchArgs, BENCH_NUMBERS, args)),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('serve: help, a usage mistake, or every number as written', () => {
    fc.assert(
      fc.property(argv(SERVE_VALUES), (args) => check(parseServeArgs, SERVE_NUMBERS, args)),
      { seed: SEED, numRuns: RUNS },
    );
  });
});
