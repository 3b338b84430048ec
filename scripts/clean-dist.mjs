#!/usr/bin/env node
// Empties dist/ before a build: tsc never deletes the output of a source that was renamed or
// removed, and a stale module there would still be importable (and packed).
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

rmSync(join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'dist'), {
  recursive: true,
  force: true,
});
