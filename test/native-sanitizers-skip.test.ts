/**
 * test/native-sanitizers.test.ts where no sanitizer can be used (here: a `cc` that fails, as
 * one without the sanitizer runtimes does): every test skips, with its reason, and the file
 * leaves nothing behind in the temporary folder, though a file whose tests all skip runs no
 * afterAll. Run as its own vitest, with its own TMPDIR.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-sanitizers-skip-');

// Before: its two probes' folders (probe.c in each) were left in TMPDIR.
it('with no usable sanitizer, every test skips and no temporary folder is left', () => {
  const tmp = tempDir();
  const run = spawnSync(
    process.execPath,
    [join(packageRoot, 'node_modules', 'vitest', 'vitest.mjs'), 'run', 'test/native-sanitizers.test.ts'],
    {
      cwd: packageRoot,
      encoding: 'utf8',
      env: { ...process.env, CC: 'false', TMPDIR: tmp, NO_COLOR: '1', FORCE_COLOR: '0' },
      timeout: 60_000,
    },
  );
  expect(run.status).toBe(0);
  expect(run.stdout).toMatch(/Tests +7 skipped/);
  expect(readdirSync(tmp)).toEqual([]);
});
