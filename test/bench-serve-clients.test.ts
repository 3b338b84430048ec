/**
 * bench/serve-clients.ts, whose figures docs/limits.md (HTTP) quotes, still runs, every kind: a
 * server child held by a few idle, silent, stalled-upload or non-reading connections answers
 * /health meanwhile, and the bench reports its memory figures; a large JSON call is answered
 * whole while /health is asked. Nothing here asserts a figure (the machine's memory and timing
 * are not the test's); only that the command works end to end.
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
  it('reports the memory held by idle, silent, stalled-upload and non-reading clients', async () => {
    const kinds = ['idle', 'silent', 'upload', 'unread'] as const;
    const all = await Promise.all(kinds.map(bench));
    const [, , upload] = all;
    for (const [i, kind] of kinds.entries()) {
      const figures = all[i]!;
      expect(figures).toMatchObject({ kind, connections: 3, healthMeanwhile: 200 });
      expect(typeof figures.rssBeforeMiB).toBe('number');
      expect(typeof figures.perConnectionKiB).toBe('number');
    }
    // Still uploading when measured: a refused upload (413 from its headers) holds nothing.
    expect(upload).toMatchObject({ answered: 0 });
  });

  it('answers a 65,536-row JSON call whole, asking /health meanwhile', async () => {
    const figures = await bench('json');
    // 65,536 rows x 256 out-features at ~20 bytes a float: hundreds of MiB, all of it read.
    expect(figures).toMatchObject({ kind: 'json', rows: 65_536, status: 200 });
    expect(figures.answerMiB).toBeGreaterThan(256);
    expect(typeof figures.healthMaxSeconds).toBe('number');
    expect(typeof figures.rssPeakMiB).toBe('number');
  });
});
