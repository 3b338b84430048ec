/**
 * The command line's dispatch: `bench`, `bench admission`, `serve`, help and version. Every
 * failure ends as ONE line on stderr: usage mistakes exit 2, anything else exits 1, and no
 * stack trace is ever printed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { nearestName } from '../nearest-name.js';
import { packageRoot } from '../paths.js';
import { firstWord, isHelpArg, UsageError, unknownFlag } from './args.js';
import { ShutdownSignals } from './shutdown-signals.js';

export const HELP = `Usage: omni-runtime <command> [flags]

Commands:
  bench              open-loop load on the native worker (CPU fixture by default): the default
                     serial scheduler (unbounded queue) against bounded admission; prints a
                     table and writes results.json + SVG charts (npm start runs this)
  bench admission    N threads admit/release on one shared BoundedAdmission vs raw Atomics
  serve              the HTTP front for the native worker

Flags:
  -h, --help         this help; every command has its own (omni-runtime bench --help, or
                     omni-runtime help bench)
  -v, --version      the package version

A command takes a value flag once: a second value for one is a usage mistake (exit 2).
`;

function version(): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version?: string };
  return pkg.version ?? 'unknown';
}

/** Top-level letters take no value; a wrapper, so .some()'s index is not read as isHelpArg's options. */
const isHelpFlag = (arg: string): boolean => isHelpArg(arg);

/**
 * --version, or -v alone or repeated in a group (`-vv`): node:util reads `-vv` as -v -v, and a
 * boolean flag given twice loses nothing, as a command's `--json --json` does not.
 */
const isVersionFlag = (arg: string): boolean => arg === '--version' || /^-v+$/.test(arg);

/** The arguments before any `--`: a -h or --help after it is not asking for help. */
function beforeEnd(args: readonly string[]): readonly string[] {
  const end = args.indexOf('--');
  return end === -1 ? args : args.slice(0, end);
}

/** Runs one command line (without `node` and the script) and resolves with its exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Help wins over the other top-level flags (`--version --help`, `--frobnicate -h`), as it
  // does over any flag of a command: a line that starts with a flag and holds help asks for it.
  if (command?.startsWith('-') && beforeEnd(argv).some(isHelpFlag)) {
    return help(argv.filter((arg) => !isHelpFlag(arg)));
  }
  if (command !== undefined && isVersionFlag(command)) {
    const other = rest.find((arg) => !isVersionFlag(arg));
    if (other !== undefined) throw new UsageError(`${command} takes no arguments, got '${other}'`);
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  switch (command) {
    case undefined:
    case 'help':
      return help(rest);
    case 'bench': {
      const admission = rest[0] === 'admission' ? rest.slice(1) : await admissionHelp(rest);
      if (admission !== undefined) {
        const { runAdmissionBenchCommand } = await import('./admission-bench-command.js');
        return inCommand('bench admission', () => runAdmissionBenchCommand(admission));
      }
      const { runBenchCommand } = await import('./bench-command.js');
      return inCommand('bench', () => runBenchCommand(rest));
    }
    case 'serve': {
      // Listen before loading the HTTP stack (~0.2 s): a SIGTERM meanwhile stops, not kills.
      const listening = new ShutdownSignals(process);
      const logging = (): void => {
        serving = true;
      };
      try {
        // Loaded on demand, like the bench commands: `bench` does not pay for the HTTP stack.
        const { runServeCommand } = await import('./serve-command.js');
        return await inCommand('serve', () => runServeCommand(rest, { listening, logging }));
      } finally {
        listening.dispose();
      }
    }
    default:
      throw new UsageError(command.startsWith('-') ? topFlagMistake(command) : unknownCommand(command));
  }
}

/**
 * Whether `serve` has begun its log (its --help is not one): see endsWhenReaderLeaves. Never
 * reset: a failed write's 'error' comes a tick after it, and the drain's last line is written
 * just before the command returns: reset there, that line's error would end the process.
 */
let serving = false;

/**
 * Whether a stdout reader that left (EPIPE: `| head -1`, a log shipper that died) ends the
 * process. It does for a command whose work is what it prints; not once `serve` runs, whose
 * lines are a log of its work: exiting there skipped the drain a SIGTERM owes its in-flight
 * requests, and said 0 for work it cut off. The same holds for a stdout that refuses writes
 * (a full disk): a log lost is no reason to stop serving.
 */
export function endsWhenReaderLeaves(): boolean {
  return !serving;
}

const COMMANDS = ['bench', 'serve'];
const TOP_FLAGS = ['help', 'version'];
/** The top-level flags' one-letter names. */
const TOP_SHORT: Readonly<Record<string, string>> = { h: 'help', v: 'version' };

/**
 * A top-level flag that is not one, said as a command's flags are (node:util): named without
 * its `=value`, and a real one given a value "takes no value" rather than "did you mean" itself.
 * After one dash, a group of one-letter flags: node:util names its first unknown letter (`-x=1`
 * is -x -= -1: '-x'), as `bench -x=1` says; the whole argument was named, `=1` and all.
 */
function topFlagMistake(arg: string): string {
  if (arg.startsWith('--')) {
    const name = arg.split('=')[0]!;
    return TOP_FLAGS.includes(name.slice(2)) ? `${name} takes no value` : unknownFlag(name, TOP_FLAGS);
  }
  const letters = [...arg.slice(1)];
  if (letters[0] !== undefined && letters[1] === '=' && Object.hasOwn(TOP_SHORT, letters[0])) {
    return `-${letters[0]} takes no value`;
  }
  const unknown = letters.find((letter) => !Object.hasOwn(TOP_SHORT, letter));
  return unknownFlag(unknown === undefined ? arg : `-${unknown}`, TOP_FLAGS);
}

/** "unknown command 'server' (did you mean serve? commands: bench, serve)" */
function unknownCommand(command: string): string {
  const near = nearestName(command, COMMANDS);
  return `unknown command '${command}' (${near === undefined ? '' : `did you mean ${near}? `}commands: ${COMMANDS.join(', ')})`;
}

/**
 * `help [command]`, or a line of top-level flags holding -h: the top-level help, or the help of
 * the command named first (the words after it go along, so `help bench admission` is the
 * subcommand's). Flags are skipped: `help --help`, `--help --json bench` still ask for help.
 */
function help(args: readonly string[]): Promise<number> {
  const at = args.findIndex((arg) => !arg.startsWith('-'));
  if (at === -1) {
    process.stdout.write(HELP);
    return Promise.resolve(0);
  }
  const topic = args[at]!;
  if (topic === 'bench' || topic === 'serve') {
    // Right after the command, before any `--` the line holds: after it, it would be an argument.
    return main([topic, '--help', ...args.slice(at + 1).filter((arg) => !isHelpFlag(arg))]);
  }
  throw new UsageError(`help takes a command (bench, serve), got '${topic}'`);
}

/**
 * `bench -h admission` asks for the subcommand's help, as `bench admission -h` does: ['--help']
 * when a help flag stands before any `--` and the first word that is not a flag or a flag's
 * value is 'admission'; otherwise undefined (the line is bench's).
 */
async function admissionHelp(args: readonly string[]): Promise<string[] | undefined> {
  const flags = beforeEnd(args);
  if (!flags.some(isHelpFlag)) return undefined;
  const { BENCH_FLAGS } = await import('./bench-options.js');
  return firstWord(flags, BENCH_FLAGS) === 'admission' ? ['--help'] : undefined;
}

/** Runs a command, naming it in the usage mistakes it throws (the line says whose flag it was). */
async function inCommand(name: string, run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof UsageError) err.command ??= name;
    throw err;
  }
}

/** The one line an error becomes: its stable code when it has one, then its message. */
export function errorLine(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown };
  const message = typeof e?.message === 'string' && e.message !== '' ? e.message : String(err);
  // Node's system errors already name their code in the message (`listen EADDRINUSE: ...`).
  const coded = typeof e?.code === 'string' && !(err instanceof UsageError) && !message.includes(e.code);
  const code = coded ? `${e.code}: ` : '';
  const usage = err instanceof UsageError;
  const command = usage && err.command !== undefined ? `${err.command}: ` : '';
  const hint = usage ? ' (see --help)' : '';
  return `omni-runtime: ${command}${code}${message}${hint}`.replace(/\s+/g, ' ').trim();
}

/**
 * A stdout that refused the output (not a reader that left): the error for its one line,
 * saying where the write went, its system code (ENOSPC, EIO) kept.
 */
export function outputLost(err: NodeJS.ErrnoException): Error {
  return Object.assign(new Error(`cannot write to stdout: ${err.message}`), { code: err.code });
}

/** Exit status for a failure: 2 for usage mistakes, 1 for the rest. */
export function exitCodeFor(err: unknown): number {
  return err instanceof UsageError ? 2 : 1;
}
