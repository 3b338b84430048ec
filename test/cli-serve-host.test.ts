/**
 * `serve --host` as an operator types it: spaces around the value (a quoted `"$HOST "`) are not
 * part of a host name, as they are not part of a number flag's value (docs/limits.md: numbers are
 * read trimmed). Before, the spaces went to getaddrinfo, and the one line on stderr (whitespace
 * folded) read "getaddrinfo ENOTFOUND 127.0.0.1": a refusal of the very address given.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../src/cli/serve-command.js';
import { packageRoot } from '../src/paths.js';

const CLI = join(packageRoot, 'dist', 'src', 'cli.js');
const stops: (() => void)[] = [];

afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

describe('serve --host', () => {
  it('is read trimmed, as the number flags are', () => {
    expect(parseServeArgs(['--host', ' 127.0.0.1 '])).toMatchObject({ host: '127.0.0.1' });
    expect(parseServeArgs(['--host=\t::1\n'])).toMatchObject({ host: '::1' });
  });

  it('refuses a host that is empty or only spaces (listening on every interface is not asked for)', () => {
    for (const host of ['', ' ', '\t\n']) {
      expect(() => parseServeArgs(['--host', host])).toThrow(
        expect.objectContaining({ code: 'OMNI_ERR_USAGE' }),
      );
    }
  });

  it('the built CLI listens on the address given with spaces around it, and drains on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      [CLI, 'serve', '--host', ' 127.0.0.1 ', '--port', '0', '--backend', 'fixture'],
      { cwd: packageRoot, env: { ...process.env, OMNI_BACKEND: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    stops.push(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const exit = once(child, 'exit') as Promise<[number | null]>;
    const [first] = (await Promise.race([
      once(createInterface({ input: child.stdout }), 'line'),
      exit.then(([code]) => [`exited ${code}: ${stderr}`]),
    ])) as [string];
    expect(first).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+ /);
    child.kill('SIGTERM');
    const [code] = await exit;
    expect(code).toBe(0);
    expect(stderr).toBe('');
  });
});
