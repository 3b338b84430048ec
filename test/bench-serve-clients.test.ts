/**
 * bench/serve-clients.ts, whose figures README "Limits" (HTTP) quotes, still runs: a server
 * child held by a few stalled uploads and by a few clients that never read their answers answers
 * /health meanwhile, and the bench reports its memory figures. Nothing here asserts a figure (the
 * machine's memory and timing are not the test's); only that the command works end to end.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';

const run = promisify(execFile);

async function bench(kind: string): Promise<Record<string, unknown>> {
  const script = join(packageRoot, 'dist', 'bench', 'serve-clients.js');
  // The bound only stops a hung child; what is asserted is what it printed.
  const { stdout } = await run(process.execPath, [script, '--kind', kind, '--connections', '3'], {
    cwd: packageRoot,
    timeout: 60_000,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as Record<string, unknown>;
}

describe('npm run bench:serve-clients', () => {
  it('reports the memory held by stalled uploads and by clients that do not read', async () => {
    const [upload, unread] = await Promise.all([bench('upload'), bench('unread')]);
    for (const [kind, figures] of [
      ['upload', upload],
      ['unread', unread],
    ] as const) {
      expect(figures).toMatchObject({ kind, connections: 3, healthMeanwhile: 200 });
      expect(typeof figures.rssBeforeMiB).toBe('number');
      expect(typeof figures.perConnectionKiB).toBe('number');
    }
    // Still uploading when measured: a refused upload (413 from its headers) holds nothing.
    expect(upload).toMatchObject({ answered: 0 });
  });
});
