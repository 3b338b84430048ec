/**
 * scripts/clean-dist.mjs (the first step of `npm run build`) empties the package's dist/: tsc
 * never deletes the output of a renamed or removed source, and a stale module left there would
 * still be importable and packed. Run on a copy, so the checkout's dist/ is untouched.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-clean-dist-');

it("removes the package's dist/ with what is in it, and nothing beside it", () => {
  const pkg = tempDir();
  mkdirSync(join(pkg, 'scripts'));
  copyFileSync(join(packageRoot, 'scripts', 'clean-dist.mjs'), join(pkg, 'scripts', 'clean-dist.mjs'));
  mkdirSync(join(pkg, 'dist', 'src', 'renamed'), { recursive: true });
  writeFileSync(join(pkg, 'dist', 'src', 'renamed', 'old.js'), 'export {};\n');
  writeFileSync(join(pkg, 'package.json'), '{}\n');
  const clean = () =>
    spawnSync(process.execPath, [join(pkg, 'scripts', 'clean-dist.mjs')], {
      cwd: tempDir(),
      encoding: 'utf8',
    });

  const first = clean();
  expect(first.status).toBe(0);
  expect(existsSync(join(pkg, 'dist'))).toBe(false);
  expect(existsSync(join(pkg, 'package.json'))).toBe(true);
  expect(existsSync(join(pkg, 'scripts', 'clean-dist.mjs'))).toBe(true);
  // A fresh clone has no dist/: the build must not fail on its first step.
  expect(clean().status).toBe(0);
});
