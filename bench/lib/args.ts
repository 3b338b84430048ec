/**
 * The developer benches' command lines: each takes a few positional arguments (or none), and a
 * bad one is refused before anything is measured, as one line naming the argument and what it
 * takes, exit 2 (the CLI's usage status). Read as Number() they became NaN, 0 or a fraction and
 * failed minutes later, far from the cause ("median of no values"), or ran something else.
 * `--help` (or `-h`) prints the usage line on stdout and exits 0 without measuring, as the CLI's
 * commands do; before, it was refused as a mistake (a bad count, an argument too many).
 */
import { UsageError } from '../../src/cli/args.js';
import { decimalValue, isWholeDecimal } from '../../src/decimal.js';

/** One positional argument: its name and what it takes (said in a refusal), its default, its reader. */
export interface BenchArg<T> {
  readonly name: string;
  readonly takes: string;
  readonly fallback: T;
  /** The value `raw` names, or undefined where it is not one this argument takes. */
  readonly read: (raw: string) => T | undefined;
}

type Values<S extends readonly BenchArg<unknown>[]> = { -readonly [K in keyof S]: S[K]['fallback'] };

/** A count: a whole number >= `min` (1 unless said), written in decimal ('2e1' is 20). */
export function countArg(name: string, fallback: number, min = 1): BenchArg<number> {
  return {
    name,
    takes: `an integer >= ${min}`,
    fallback,
    read: (raw) => {
      const value = decimalValue(raw);
      const whole = value !== undefined && Number.isSafeInteger(value) && isWholeDecimal(raw);
      return whole && value >= min ? value : undefined;
    },
  };
}

/** A finite number > 0 (a time), written in decimal. */
export function positiveArg(name: string, fallback: number): BenchArg<number> {
  return {
    name,
    takes: 'a finite number > 0',
    fallback,
    read: (raw) => {
      const value = decimalValue(raw);
      return value !== undefined && Number.isFinite(value) && value > 0 ? value : undefined;
    },
  };
}

/** The line a bench's usage is shown as: `node dist/bench/NAME.js [a] [b]`. */
export function benchUsage(script: string, args: readonly string[]): string {
  return ['node', `dist/bench/${script}.js`, ...args.map((a) => `[${a}]`)].join(' ');
}

/** Thrown where the command line asks for help: `usage` is the answer, and nothing is measured. */
export class BenchHelp {
  constructor(readonly usage: string) {}
}

/**
 * `argv` (the arguments after the script) read against `specs`, in order, a missing one its
 * default; throws a UsageError for a value an argument does not take, an option, or one argument
 * too many, and a BenchHelp where it asks for help.
 */
export function readBenchArgs<const S extends readonly BenchArg<unknown>[]>(
  script: string,
  argv: readonly string[],
  specs: S,
): Values<S> {
  const line = benchUsage(
    script,
    specs.map((s) => s.name),
  );
  const shown = `(usage: ${line})`;
  if (argv.includes('--help') || argv.includes('-h')) throw new BenchHelp(line);
  // No bench takes an option: '--rounds 3' is a mistake to name, not a count that is not one.
  const option = argv.find((raw) => raw.startsWith('--'));
  if (option !== undefined) throw new UsageError(`unknown option '${option}' ${shown}`, script);
  if (argv.length > specs.length) {
    const n = specs.length;
    const takes = n === 0 ? 'no arguments' : `at most ${n} argument${n === 1 ? '' : 's'}`;
    throw new UsageError(`takes ${takes}, got '${argv[specs.length]}' ${shown}`, script);
  }
  return specs.map((spec, i) => {
    const raw = argv[i];
    if (raw === undefined) return spec.fallback;
    const value = spec.read(raw);
    if (value === undefined) {
      throw new UsageError(`${spec.name} must be ${spec.takes}, got ${JSON.stringify(raw)} ${shown}`, script);
    }
    return value;
  }) as Values<S>;
}

/**
 * Runs `read`, the reading of `script`'s command line (positional or flags, as serve.bench's);
 * a UsageError it throws ends the process at once: its one line on stderr, exit 2, no stack
 * trace, nothing measured. A BenchHelp ends it too: the usage line on stdout, exit 0.
 */
export function orUsageExit<T>(script: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof BenchHelp) {
      process.stdout.write(`usage: ${err.usage}\n`);
      process.exit(0);
    }
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${script}: ${err.message}\n`);
    process.exit(2);
  }
}

/**
 * orUsageExit for a bench of flags (read with the CLI's parseFlags, whose lines do not show the
 * bench's usage): a UsageError's line ends with `usage`, the bench's usage line, as
 * readBenchArgs' lines do, so an unknown flag is refused with what the bench takes.
 */
export function orFlagUsageExit<T>(script: string, usage: string, read: () => T): T {
  return orUsageExit(script, () => {
    try {
      return read();
    } catch (err) {
      if (err instanceof UsageError) throw new UsageError(`${err.message} (usage: ${usage})`, script);
      throw err;
    }
  });
}

/** This process's arguments read against `specs` (see readBenchArgs), or exit 2. */
export function benchArgs<const S extends readonly BenchArg<unknown>[]>(script: string, specs: S): Values<S> {
  return orUsageExit(script, () => readBenchArgs(script, process.argv.slice(2), specs));
}
