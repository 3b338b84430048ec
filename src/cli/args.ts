/**
 * Flag parsing shared by every subcommand: node:util parseArgs, with every mistake turned into
 * a UsageError that the command line prints as one line and exits 2 (never a stack trace).
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { checkBounds } from '../admission/bounds.js';
import { decimalValue, isWholeDecimal, positiveDecimal } from '../decimal.js';
import { BACKEND_ENV, type BackendPreference, backendFromEnv } from '../native/backend.js';
import { nearestName } from '../nearest-name.js';

export class UsageError extends Error {
  readonly code = 'OMNI_ERR_USAGE';
  /**
   * The command whose line holds the mistake ('bench', 'bench admission', 'serve'), printed
   * before the message; main() names it where the check that threw did not know it.
   */
  command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}

export type FlagSpec = NonNullable<ParseArgsConfig['options']>;

/**
 * Parses `argv` strictly against `options`; unknown flags, missing values and a value flag
 * given twice are UsageErrors.
 */
export function parseFlags<const O extends FlagSpec>(
  command: string,
  argv: readonly string[],
  options: O,
): {
  values: ReturnType<typeof parseArgs<{ options: O; strict: true; allowPositionals: true }>>['values'];
  positionals: string[];
} {
  try {
    const args = joinNegativeValues(argv, options);
    const parsed = parseArgs({ args, options, strict: true, allowPositionals: true, tokens: true });
    // parseArgs keeps a repeated value's last one; the first would vanish without a word.
    // --help wins over it, as over any other bad value.
    const given = new Set<string>();
    const help = (parsed.values as { help?: boolean }).help === true;
    for (const token of help ? [] : parsed.tokens) {
      if (token.kind !== 'option' || token.value === undefined) continue;
      if (given.has(token.name)) throw new UsageError(`--${token.name} given more than once`, command);
      given.add(token.name);
    }
    return { values: parsed.values, positionals: parsed.positionals };
  } catch (err) {
    if (err instanceof UsageError) throw err;
    // --help wins here too: `bench --frobnicate --help` is a user looking for the right flag.
    if (asksHelp(argv, options)) {
      const help = parseArgs({ args: ['--help'], options, strict: true, allowPositionals: true });
      return { values: help.values, positionals: [] };
    }
    throw new UsageError(parseMistake((err as Error).message, options), command);
  }
}

/**
 * node:util's message, said as the rest of the CLI says its mistakes: its messages run to
 * several sentences over several lines, and name a flag as "Option '-h, --help <value>'". An
 * unknown long flag names the command's flag it was probably meant to be.
 */
function parseMistake(message: string, options: FlagSpec): string {
  const first = message.split('\n')[0]!.split('. To specify')[0]!;
  const unknown = /^Unknown option '([^']*)'/.exec(first);
  if (unknown) return unknownFlag(unknown[1]!, Object.keys(options));
  const option = /^Option '(?:-\w, )?(--[\w-]+)[^']*' (.*)$/.exec(first);
  // "argument is ambiguous": the value is missing and the next flag would be taken for it.
  if (option && /^argument (missing|is ambiguous)/.test(option[2]!)) return `${option[1]} needs a value`;
  if (option && /^does not take an argument/.test(option[2]!)) return `${option[1]} takes no value`;
  return first;
}

/** "unknown option '--thread' (did you mean --threads?)": a guess for a long flag only. */
export function unknownFlag(flag: string, names: readonly string[]): string {
  const near = flag.startsWith('--') ? nearestName(flag.slice(2), names) : undefined;
  return `unknown option '${flag}'${near === undefined ? '' : ` (did you mean --${near}?)`}`;
}

/** A -h or --help (alone or in a short-flag group) before any `--`, where the command has that flag. */
function asksHelp(argv: readonly string[], options: FlagSpec): boolean {
  if (options.help === undefined) return false;
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).some((arg) => isHelpArg(arg, options));
}

/**
 * One argument asking for help: --help, or -h alone or in a group of short flags (node:util
 * reads `-jh` as -j -h, so `bench -jh` asks as `bench -j -h` does). A group is letters only: a
 * negative number (`-1h`) or other text that starts with '-' is a flag's value. A letter that
 * takes a value ends the group (the rest is its value). Without `options` (the top level) every
 * letter but h is a flag without a value.
 */
export function isHelpArg(arg: string, options?: FlagSpec): boolean {
  if (arg === '--help') return true;
  if (!/^-[A-Za-z]+$/.test(arg)) return false;
  const helpLetter = options === undefined ? 'h' : options.help?.short;
  for (const letter of arg.slice(1)) {
    if (letter === helpLetter) return true;
    const takesValue = Object.values(options ?? {}).some((o) => o.short === letter && o.type === 'string');
    if (takesValue) return false;
  }
  return false;
}

/**
 * The first word of `argv` that is neither a flag nor a flag's value (`bench --out admission`:
 * none; `bench --json admission`: 'admission'), whatever else is wrong with the line.
 */
export function firstWord(argv: readonly string[], options: FlagSpec): string | undefined {
  const args = joinNegativeValues(argv, options);
  return parseArgs({ args, options, strict: false, allowPositionals: true }).positionals[0];
}

/**
 * `--duration -1` is ambiguous to parseArgs (the value looks like a flag); join a negative
 * number to its string flag as `--duration=-1`, so the value check names the real mistake.
 */
function joinNegativeValues(argv: readonly string[], options: FlagSpec): string[] {
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const next = argv[i + 1];
    const spec = arg.startsWith('--') ? options[arg.slice(2)] : undefined;
    if (spec?.type === 'string' && next !== undefined && /^-[\d.]/.test(next)) {
      args.push(`${arg}=${next}`);
      i++;
    } else {
      args.push(arg);
    }
  }
  return args;
}

/**
 * A number flag: finite, within [min, max] (and above `greater` when given), integer when asked.
 * Read by decimalValue, as x-omni-deadline-ms is: text too small for a double is not the 0
 * Number() makes of it, so '1e-400' passes `greater: 0` as the shortest time there is (as
 * --deadline-ms reads it) and '-1e-400' fails `min: 0`. `-0`, where 0 is in range, comes back
 * as 0: handed on as -0 it would print as "-0" (toLocaleString).
 */
export function numberFlag(
  name: string,
  raw: string | undefined,
  fallback: number,
  {
    min = Number.NEGATIVE_INFINITY,
    max = Number.POSITIVE_INFINITY,
    greater = Number.NEGATIVE_INFINITY,
    integer = false,
  } = {},
): number {
  if (raw === undefined) return fallback;
  const value = decimalValue(raw);
  if (
    value === undefined ||
    !Number.isFinite(value) ||
    value < min ||
    value > max ||
    !(value > greater) ||
    (integer && !(Number.isInteger(value) && isWholeDecimal(raw)))
  ) {
    // Without a stated maximum, say that one too large for a double ('1e309') is refused too.
    const kind = integer ? 'an integer' : Number.isFinite(max) ? 'a number' : 'a finite number';
    const range = rangeWords(min, max, greater);
    throw new UsageError(`--${name} must be ${kind}${range && ` ${range}`}, got ${JSON.stringify(raw)}`);
  }
  return value === 0 ? 0 : value;
}

/**
 * --deadline-ms, for bench and serve: milliseconds > 0 of any length, read as x-omni-deadline-ms
 * is (positiveDecimal), so '1e-400' is the shortest deadline, not refused as the 0 Number() reads.
 * Finite: Infinity (none) is no deadline for bench to measure by, and serve's default is none.
 */
export function deadlineFlag(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = positiveDecimal(raw);
  if (value === undefined || !Number.isFinite(value)) {
    throw new UsageError(`--deadline-ms must be a finite number > 0, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** A range as the library's own errors say it: "from 1 to 256", "> 0, at most 3600". */
function rangeWords(min: number, max: number, greater: number): string {
  const low = Number.isFinite(min) ? min : undefined;
  const high = Number.isFinite(max) ? max : undefined;
  if (low !== undefined && high !== undefined && !Number.isFinite(greater)) return `from ${low} to ${high}`;
  const words = [
    ...(Number.isFinite(greater) ? [`> ${greater}`] : []),
    ...(low !== undefined ? [`>= ${low}`] : []),
    ...(high !== undefined ? [`at most ${high}`] : []),
  ];
  return words.join(', ');
}

/** One of a fixed set of words. */
export function choiceFlag<T extends string>(
  name: string,
  raw: string | undefined,
  choices: readonly T[],
  fallback: T,
): T {
  if (raw === undefined) return fallback;
  if (!(choices as readonly string[]).includes(raw)) {
    throw new UsageError(`--${name} must be one of ${choices.join(', ')}, got ${JSON.stringify(raw)}`);
  }
  return raw as T;
}

/** A path: any non-blank string, resolved by whoever opens it. */
function pathFlag(name: string, raw: string | undefined): string | undefined {
  if (raw !== undefined && raw.trim() === '') throw new UsageError(`--${name} must not be empty`);
  return raw;
}

/**
 * --cuda-library and --fixture-library for the backend the command will run: a path for a
 * backend it will certainly not load is a usage mistake rather than a flag silently ignored
 * (bench on the CPU fixture while the user named a CUDA library). That backend is --backend,
 * else OMNI_BACKEND (read as selection reads it), else the command's own default; 'auto' may
 * load either, and an OMNI_BACKEND that names no backend is left for start to refuse.
 */
export function libraryFlags(
  values: {
    readonly 'cuda-library'?: string | undefined;
    readonly 'fixture-library'?: string | undefined;
  },
  backendFlag: BackendPreference | undefined,
  env: NodeJS.ProcessEnv,
  commandDefault: BackendPreference = 'auto',
): { cuda: string | undefined; fixture: string | undefined } {
  const cuda = pathFlag('cuda-library', values['cuda-library']);
  const fixture = pathFlag('fixture-library', values['fixture-library']);
  const fromEnv = backendFromEnv(env);
  const backend = backendFlag ?? fromEnv ?? commandDefault;
  const defaultNote =
    backendFlag !== undefined
      ? ''
      : fromEnv !== undefined
        ? ` (${BACKEND_ENV}=${fromEnv})`
        : ' (the default)';
  const unused =
    backend === 'fixture' && cuda !== undefined
      ? 'cuda'
      : backend === 'cuda' && fixture !== undefined
        ? 'fixture'
        : undefined;
  if (unused !== undefined) {
    throw new UsageError(
      `--${unused}-library is not loaded on the ${backend} backend${defaultNote}: give --backend ${unused} or auto`,
    );
  }
  return { cuda, fixture };
}

/**
 * --requests and --units together: each may be in range alone and still not fit the one word
 * the admission packs them into (docs/limits.md). A usage mistake, so it is said like one.
 */
export function checkBoundFlags(requests: number, units: number | undefined): void {
  try {
    checkBounds({ requests, units });
  } catch (err) {
    throw new UsageError(`--requests and --units: ${(err as Error).message}`);
  }
}
