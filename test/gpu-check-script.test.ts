/**
 * scripts/gpu-check.sh on a GPU machine, up to the point where it starts scripts/gpu-check.mjs:
 * which native libraries it ends up running. A library built there matches that machine's driver;
 * one carried in .gpu/native-build (built on a development machine) may need a newer driver, so it
 * may only stand in for what could not be built there.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-gpu-check-script-');

/** A copy of what gpu-check.sh needs, with gpu-check.mjs replaced by one that names the libraries. */
function gpuMachineTree(): { root: string; bin: string } {
  const scratch = tempDir();
  const root = join(scratch, 'repo');
  mkdirSync(join(root, 'scripts'), { recursive: true });
  for (const f of ['gpu-check.sh', 'build-native.mjs']) {
    copyFileSync(join(packageRoot, 'scripts', f), join(root, 'scripts', f));
  }
  cpSync(join(packageRoot, 'native'), join(root, 'native'), {
    recursive: true,
    filter: (src) => !src.endsWith(join('native', 'build')),
  });
  writeFileSync(
    join(root, 'scripts', 'gpu-check.mjs'),
    "import { readFileSync } from 'node:fs';\n" +
      "for (const lib of ['libomni_cuda.so', 'libomni_fixture.so'])\n" +
      "  console.log(lib + ': ' + readFileSync('native/build/' + lib, 'utf8').trim());\n",
  );
  // As carried: node_modules unpacked, dist/ built, the development machine's libraries.
  mkdirSync(join(root, 'node_modules'));
  mkdirSync(join(root, 'dist', 'src'), { recursive: true });
  writeFileSync(join(root, 'dist', 'src', 'index.js'), '');
  mkdirSync(join(root, '.gpu', 'native-build'), { recursive: true });
  writeFileSync(join(root, '.gpu', 'native-build', 'libomni_cuda.so'), 'carried\n');
  writeFileSync(join(root, '.gpu', 'native-build', 'libomni_fixture.so'), 'carried\n');
  // An nvcc that works: it writes a stand-in library wherever -o says.
  const bin = join(scratch, 'bin');
  mkdirSync(bin);
  writeFileSync(
    join(bin, 'nvcc'),
    '#!/bin/sh\n' +
      'if [ "$1" = --version ]; then echo "Cuda compilation tools, stand-in"; exit 0; fi\n' +
      'while [ $# -gt 0 ]; do if [ "$1" = -o ]; then echo "built here" >"$2"; exit 0; fi; shift; done\n' +
      'exit 1\n',
  );
  chmodSync(join(bin, 'nvcc'), 0o755);
  return { root, bin };
}

describe('gpu-check.sh', () => {
  it('builds the CUDA library there even when the fixture does not build (cc fails)', () => {
    const { root, bin } = gpuMachineTree();
    const run = spawnSync('bash', [join(root, 'scripts', 'gpu-check.sh')], {
      cwd: root,
      env: {
        PATH: [bin, dirname(process.execPath), '/usr/bin', '/bin'].join(':'),
        HOME: root,
        CC: '/bin/false',
        CUDA_HOME: join(root, 'no-cuda-here'),
      },
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(run.stdout).toContain('libomni_cuda.so: built here');
    expect(run.stdout).toContain('libomni_fixture.so: carried');
    expect(run.status).toBe(0);
  });
});
