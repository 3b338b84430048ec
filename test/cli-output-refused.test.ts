/**
 * The built CLI when its output cannot be written at all (`> file` on a full disk, here
 * /dev/full: every write fails with ENOSPC), as opposed to a reader that left (EPIPE, see
 * cli-reader-gone). A command whose work is what it prints fails as any failure does: one line
 * on stderr, exit 1, no stack trace. A usage mistake whose line cannot be written still exits 2.
 * `serve`, whose lines are a log, keeps serving and drains on SIGTERM (exit 0): before, its
 * first line's ENOSPC killed it at once with a stack trace, its runtime cut off, exit 1.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { get } from './fixtures/serve-client.js';

const CLI = join(packageRoot, 'dist', 'src', 'cli.js');
const FULL = '/dev/full';
const started: ChildProcess[] = [];

afterEach(() => {
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

interface Run {
  readonly child: ChildProcess;
  /** Resolves with the exit code and the stream that was piped, once the child closed. */
  readonly done: Promise<{ code: number | null; signal: NodeJS.Signals | null; text: string }>;
}

/** Runs the CLI with `full` ('stdout' or 'stderr') on /dev/full and the other piped. */
function cli(args: string[], full: 'stdout' | 'stderr'): Run {
  const fd = openSync(FULL, 'w');
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, [CLI, ...args], {
      cwd: packageRoot,
      env: { ...process.env, OMNI_BACKEND: '' },
      stdio: full === 'stdout' ? ['ignore', fd, 'pipe'] : ['ignore', 'pipe', fd],
    });
  } finally {
    closeSync(fd); // the child holds its own copy
  }
  started.push(child);
  const piped = (full === 'stdout' ? child.stderr : child.stdout)!;
  let text = '';
  piped.setEncoding('utf8');
  piped.on('data', (chunk: string) => {
    text += chunk;
  });
  // 'close', not 'exit': the piped stream may still hold output at 'exit'.
  const done = (once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>).then(
    ([code, signal]) => ({ code, signal, text }),
  );
  return { child, done };
}

/** A port free a moment ago (the kernel's pick); serve is retried on the rare EADDRINUSE. */
async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  probe.close();
  await once(probe, 'close');
  return port;
}

const full = existsSync(FULL);

describe.skipIf(!full)('output that cannot be written (stdout on a full disk)', () => {
  it.each([
    [['--version']],
    [['bench', '--help']],
    [['bench', 'admission', '--help']],
    [['serve', '--help']],
  ])('%j: one line on stderr naming ENOSPC, no stack trace, exit 1', async (args) => {
    const { code, signal, text } = await cli(args, 'stdout').done;
    expect({ code, signal }).toEqual({ code: 1, signal: null });
    expect(text).toMatch(/^omni-runtime: [^\n]*\bENOSPC\b[^\n]*\n$/);
  });

  it.each([[['serve', '--port', '65536']], [['bench', '--threads', '0']], [['frobnicate']]])(
    '%j: a usage mistake whose line cannot be written on stderr still exits 2',
    async (args) => {
      const { code, signal } = await cli(args, 'stderr').done;
      expect({ code, signal }).toEqual({ code: 2, signal: null });
    },
  );

  it('serve keeps serving with its log lost, and drains on SIGTERM: exit 0, nothing on stderr', async () => {
    for (let attempt = 0; ; attempt++) {
      const port = await freePort();
      const run = cli(
        [
          'serve',
          ...['--port', String(port), '--backend', 'fixture', '--in-features', '4', '--out-features', '2'],
        ],
        'stdout',
      );
      let exited = false;
      void run.done.then(() => {
        exited = true;
      });
      // Bounded poll (5 ms apart) until it answers /health, or has ended.
      let ready = false;
      for (let i = 0; i < 2000 && !ready && !exited; i++) {
        ready = await get(`http://127.0.0.1:${port}`, '/health').then(
          (r) => r.status === 200,
          () => false,
        );
        if (!ready) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      if (!ready) {
        const ended = await run.done;
        if (attempt < 2 && ended.text.includes('EADDRINUSE')) continue; // another took the port
        // Before the fix: killed by its first line's ENOSPC, a stack trace, exit 1.
        expect(ended).toEqual({ code: 0, signal: null, text: '' });
        throw new Error('serve never answered /health');
      }
      run.child.kill('SIGTERM');
      expect(await run.done).toEqual({ code: 0, signal: null, text: '' });
      return;
    }
  });
});
