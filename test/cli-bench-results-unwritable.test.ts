/**
 * `omni-runtime bench` whose results.json cannot be written (a full disk): the run fails with
 * the write's code and, having written nothing, leaves no --out folder of its own behind, as a
 * run that fails before writing does. Before, the empty folder it made stayed. In-process, with
 * the load replaced by a made-up result and every write under the folder failing as ENOSPC.
 */
import * as fs from 'node:fs';
import { join } from 'node:path';
import { expect, it, vi } from 'vitest';
import { benchResult } from './fixtures/bench-result.js';
import { captureOutputPerTest } from './fixtures/capture-output.js';
import { tempDirs } from './fixtures/temp-dirs.js';

/** Writes under this folder fail as a full disk does. */
let failIn: string | undefined;
vi.mock('node:fs', async (importOriginal) => {
  const { fullDisk } = await import('./fixtures/full-disk.js');
  return fullDisk(
    await importOriginal<typeof import('node:fs')>(),
    (file) => failIn !== undefined && file.startsWith(failIn),
  );
});

const { runBenchCommand } = await import('../src/cli/bench-command.js');
const tempDir = tempDirs('omni-bench-unwritable-');

// Kept, not shown: what the failing run prints is not what this test checks.
captureOutputPerTest();

it('fails with the write error and removes the folder it made, which holds nothing', async () => {
  const parent = tempDir();
  const made = join(parent, 'made');
  failIn = made;
  await expect(
    runBenchCommand(['--out', join(made, 'deeper')], { runBench: async () => benchResult([]) }),
  ).rejects.toHaveProperty('code', 'ENOSPC');
  failIn = undefined;
  expect(fs.readdirSync(parent)).toEqual([]);
});
