/**
 * `omni-runtime bench` stopped by SIGINT (Ctrl-C), SIGTERM or SIGHUP (its terminal closed) while
 * it runs. It writes no partial results: the --out folder it made is removed again while empty,
 * one line on stderr says what was left, nothing reaches stdout (not half a --json summary), and
 * the signal ends the process as it would have (the parent sees it killed by that signal: exit
 * 130, 143 or 129 in a shell). Before, the signal killed it at once and the empty folder it had
 * made stayed behind (SIGHUP until session 33).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { CLI } from './fixtures/cli-process.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-bench-interrupted-');
const started: ChildProcess[] = [];

afterEach(() => {
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** A run far longer than the test, on a small layer: only the signal ends it. */
const LONG_RUN = [
  ...['--json', '--duration', '600', '--calibrate', '0.1', '--rates', '10', '--threads', '1'],
  ...['--in-features', '8', '--out-features', '8', '--max-rows', '2'],
];

it.each(['SIGINT', 'SIGTERM', 'SIGHUP'] as const)(
  '%s: removes the folder it made, prints nothing on stdout, one line on stderr, dies by the signal',
  async (signal) => {
    const made = join(tempDir(), 'made');
    const out = join(made, 'deeper');
    const child = spawn(process.execPath, [CLI, 'bench', ...LONG_RUN, '--out', out], {
      cwd: packageRoot,
      env: { ...process.env, OMNI_BACKEND: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    // 'close', not 'exit': the pipes may still hold output at 'exit'.
    const closed = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
    let ended = false;
    void closed.then(() => {
      ended = true;
    });
    // The command listens before it makes the folder: once the folder is there, so is the listener.
    const giveUp = Date.now() + 50_000;
    while (!existsSync(out) && !ended && Date.now() < giveUp) await new Promise((r) => setTimeout(r, 20));
    expect(existsSync(out), stderr).toBe(true);
    child.kill(signal);
    const [code, killedBy] = await closed;
    expect({ code, killedBy }).toEqual({ code: null, killedBy: signal });
    expect(existsSync(made)).toBe(false);
    expect(stdout).toBe('');
    const lines = stderr.split('\n').filter((line) => line !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^omni-runtime: bench: interrupted by ${signal};`));
  },
);
