/**
 * The built CLI when whoever reads its output has gone (`serve | head -1`, a log shipper that
 * died, `2>&1 | head`): the exit status is still the one the README promises. `serve` keeps
 * serving and drains on SIGTERM as always (its output is a log, not its work); any command's
 * usage mistake is still exit 2. Ordering is by the child's own lines and bounded polls of the
 * server, never by sleeps.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { sample } from './fixtures/metrics-text.js';
import { get, tryConnect } from './fixtures/serve-client.js';

const CLI = join(packageRoot, 'dist', 'src', 'cli.js');
const started: ChildProcess[] = [];
const sockets: Socket[] = [];

afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function cli(args: string[]): ChildProcess {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: packageRoot,
    env: { ...process.env, OMNI_BACKEND: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  return child;
}

function collect(stream: NodeJS.ReadableStream): () => string {
  let text = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    text += chunk;
  });
  return () => text;
}

/** Bounded poll (5 ms apart) until `ready()` holds. */
async function until(ready: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (await ready()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`never saw ${what}`);
}

describe('serve whose stdout reader has gone', () => {
  it('still drains on SIGTERM: a stalled upload holds the drain, a second signal cuts it off, exit 1', async () => {
    const child = cli([
      'serve',
      ...['--port', '0', '--backend', 'fixture', '--in-features', '4', '--out-features', '2'],
      // Long enough that only the second signal can end this drain.
      ...['--drain-timeout-ms', '600000'],
    ]);
    const stderr = collect(child.stderr!);
    // 'close', not 'exit': stderr may still hold output at 'exit', which the check would miss.
    const exit = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
    const lines = createInterface({ input: child.stdout! });
    const [first] = (await once(lines, 'line')) as [string];
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(first)![1]!;
    const port = Number(new URL(url).port);
    // The reader leaves, as `| head -1` does: the next line the server prints meets EPIPE.
    lines.close();
    child.stdout!.destroy();

    // An upload that stalls mid-body: in flight until the drain cuts it off.
    const stalled = connect({ host: '127.0.0.1', port });
    sockets.push(stalled);
    await once(stalled, 'connect');
    stalled.on('error', () => {});
    stalled.write(
      'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
        `Content-Length: 1024\r\n\r\n${'\0'.repeat(16)}`,
    );
    // In flight: the stalled request and the scrape itself.
    await until(async () => {
      const metrics = Buffer.from((await get(url, '/metrics')).bytes).toString('utf8');
      return (sample(metrics, 'omni_http_inflight') ?? 0) >= 2;
    }, 'the stalled upload in flight');

    child.kill('SIGTERM');
    // Draining: no new connections (before the fix the process was gone by now, exit 0).
    await until(async () => (await tryConnect(port)) !== 'connected', 'the listener closed');
    child.kill('SIGTERM');
    const [code, signal] = await exit;
    expect({ code, signal }).toEqual({ code: 1, signal: null });
    expect(stderr()).toBe('');
  });
});

describe('a usage mistake whose stderr reader has gone', () => {
  it.each([[['serve', '--port', '65536']], [['bench', 'admission', '--threads', '0']], [['frobnicate']]])(
    '%j still exits 2',
    async (args) => {
      const child = cli(args);
      child.stderr!.destroy(); // gone before the CLI writes its line: EPIPE
      child.stdout!.resume();
      const [code] = (await once(child, 'close')) as [number | null];
      expect(code).toBe(2);
    },
  );
});
