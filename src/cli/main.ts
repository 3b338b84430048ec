/**
 * The command line's dispatch: `bench`, `bench admission`, `serve`, help and version. Every
 * failure ends as ONE line on stderr: usage mistakes exit 2, anything else exits 1, and no
 * stack trace is ever printed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../paths.js';
import { UsageError } from './args.js';
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

/** Runs one command line (without `node` and the script) and resolves with its exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case 'help':
    case '-h':
    case '--help': {
      // `help --help`, `help -h serve`: help asked for twice is still help, not a mistake.
      const topics = rest.filter((arg) => arg !== '-h' && arg !== '--help');
      if (topics.length === 0) {
        process.stdout.write(HELP);
        return 0;
      }
      // `help bench`, `--help serve`: that command's own help. Anything else was not asked for.
      if (topics[0] === 'bench' || topics[0] === 'serve') return main([...topics, '--help']);
      throw new UsageError(`${command} takes a command (bench, serve), got '${topics[0]}'`);
    }
    case '-v':
    case '--version':
      if (rest.length > 0) throw new UsageError(`${command} takes no arguments, got '${rest[0]}'`);
      process.stdout.write(`${version()}\n`);
      return 0;
    case 'bench':
      if (rest[0] === 'admission') {
        const { runAdmissionBenchCommand } = await import('./admission-bench-command.js');
        return runAdmissionBenchCommand(rest.slice(1));
      } else {
        const { runBenchCommand } = await import('./bench-command.js');
        return runBenchCommand(rest);
      }
    case 'serve': {
      // Listen before loading the HTTP stack (~0.2 s): a SIGTERM meanwhile stops, not kills.
      const listening = new ShutdownSignals(process);
      try {
        // Loaded on demand, like the bench commands: `bench` does not pay for the HTTP stack.
        const { runServeCommand } = await import('./serve-command.js');
        return await runServeCommand(rest, { listening });
      } finally {
        listening.dispose();
      }
    }
    default:
      throw new UsageError(
        command.startsWith('-')
          ? `unknown option '${command}'`
          : `unknown command '${command}' (commands: bench, serve)`,
      );
  }
}

/** The one line an error becomes: its stable code when it has one, then its message. */
export function errorLine(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown };
  const message = typeof e?.message === 'string' && e.message !== '' ? e.message : String(err);
  // Node's system errors already name their code in the message (`listen EADDRINUSE: ...`).
  const coded = typeof e?.code === 'string' && !(err instanceof UsageError) && !message.includes(e.code);
  const code = coded ? `${e.code}: ` : '';
  const hint = err instanceof UsageError ? ' (see --help)' : '';
  return `omni-runtime: ${code}${message}${hint}`.replace(/\s+/g, ' ').trim();
}

/** Exit status for a failure: 2 for usage mistakes, 1 for the rest. */
export function exitCodeFor(err: unknown): number {
  return err instanceof UsageError ? 2 : 1;
}
