/**
 * The packed tarball as a new user meets it: unpacked into a project's node_modules (a copy, not
 * a link to this checkout, so only what `npm pack` shipped is there), its install step run, its
 * bin linked as npm links it. The package's dependencies resolve from this checkout's
 * node_modules, one folder up, as they would from a hoisted install (no registry needed).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const root = tempDirs('omni-package-install-')();
const project = join(root, 'consumer');
const installed = join(project, 'node_modules', 'omni-runtime');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

interface Manifest {
  version: string;
  bin: Record<string, string>;
  scripts: Record<string, string>;
}

// The environment the native builds run in: nvcc is left out of its PATH, as the CUDA library is
// optional and building it would take most of this file's time.
const { CUDA_HOME: _home, CUDA_PATH: _path, ...inherited } = process.env;
const withoutCuda = {
  ...inherited,
  PATH: (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => !existsSync(join(dir, 'nvcc')))
    .join(delimiter),
};

/** Runs `file args` in the consumer project; its exit status and output. */
function inProject(file: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(file, args, { cwd: project, encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

beforeAll(() => {
  // --ignore-scripts: pack what the build before the tests made, without building again.
  const [packed] = JSON.parse(
    execFileSync(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', root], {
      cwd: packageRoot,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }),
  ) as { filename: string }[];
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['-xzf', join(root, packed!.filename), '-C', installed, '--strip-components=1']);
  symlinkSync(join(packageRoot, 'node_modules'), join(root, 'node_modules'), 'dir');
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module' }));

  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Manifest;
  // The install step, as npm runs it.
  const install = /^node (\S+)(.*)$/.exec(manifest.scripts.install!);
  expect(install, manifest.scripts.install).not.toBeNull();
  execFileSync(process.execPath, [install![1]!, ...install![2]!.trim().split(/\s+/).filter(Boolean)], {
    cwd: installed,
    env: withoutCuda,
    stdio: 'ignore',
  });

  // npm's bin link: node_modules/.bin/<name> to the target, made executable.
  mkdirSync(join(project, 'node_modules', '.bin'));
  for (const [name, target] of Object.entries(manifest.bin)) {
    chmodSync(join(installed, target), 0o755);
    symlinkSync(join(installed, target), join(project, 'node_modules', '.bin', name));
  }
});

describe('the installed package', () => {
  it('has the native fixture library its install step built', () => {
    expect(existsSync(join(installed, 'native', 'build', 'libomni_fixture.so'))).toBe(true);
  });

  it.each([
    [['--help'], 'Usage: omni-runtime <command> [flags]'],
    [['bench', '--help'], 'Usage: omni-runtime bench [flags]'],
  ])('omni-runtime %j prints its help, exits 0', (args, first) => {
    const run = inProject(join(project, 'node_modules', '.bin', 'omni-runtime'), args);
    expect(run.status).toBe(0);
    expect(run.stdout.split('\n')[0]).toBe(first);
  });

  it('imports both entry points from an .mjs file and runs work on the fixture', () => {
    writeFileSync(
      join(project, 'main.mjs'),
      `import { BoundedAdmission, LinearRuntime } from 'omni-runtime';
import { serve } from 'omni-runtime/serve';
const lr = await LinearRuntime.start({ backend: 'fixture', threads: 1, inFeatures: 4, outFeatures: 4 });
const y = await lr.run(new Float32Array(8));
await lr.close();
console.log(JSON.stringify({ admission: typeof BoundedAdmission, serve: typeof serve, out: y.length }));
`,
    );
    const run = inProject(process.execPath, ['main.mjs']);
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ admission: 'function', serve: 'function', out: 8 });
  });

  it('loads both entry points through require() from a CommonJS file, as README says', () => {
    // require(esm) (Node 20.19+) refuses a module graph with a top-level await
    // (ERR_REQUIRE_ASYNC_MODULE): one added anywhere below either entry point would break every
    // CommonJS consumer while every ESM one still works.
    writeFileSync(
      join(project, 'main.cjs'),
      `const { BoundedAdmission, Runtime } = require('omni-runtime');
const { serve } = require('omni-runtime/serve');
const admission = new BoundedAdmission({ requests: 2 });
console.log(JSON.stringify({ runtime: typeof Runtime, serve: typeof serve, capacity: admission.report().capacity }));
`,
    );
    const run = inProject(process.execPath, ['main.cjs']);
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ runtime: 'function', serve: 'function', capacity: 2 });
  });

  it('lets tools read its package.json through the package name', () => {
    // Bundlers, version checks and license scanners resolve '<name>/package.json'; with an
    // `exports` map, a subpath it does not list is ERR_PACKAGE_PATH_NOT_EXPORTED.
    writeFileSync(
      join(project, 'manifest.mjs'),
      `import { createRequire } from 'node:module';
const pkg = createRequire(import.meta.url)('omni-runtime/package.json');
const imported = await import('omni-runtime/package.json', { with: { type: 'json' } });
console.log(JSON.stringify({ name: pkg.name, version: imported.default.version }));
`,
    );
    const run = inProject(process.execPath, ['manifest.mjs']);
    expect(run.status, run.stderr).toBe(0);
    const packed = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Manifest;
    expect(JSON.parse(run.stdout)).toEqual({ name: 'omni-runtime', version: packed.version });
  });

  it('maps a stack trace through its source maps to the TypeScript sources', () => {
    // The modules name their maps; unshipped, `--enable-source-maps` shows only dist/ frames.
    writeFileSync(
      join(project, 'trace.mjs'),
      `import { BoundedAdmission } from 'omni-runtime';
try { new BoundedAdmission({ requests: 0 }); } catch (err) { console.log(err.stack); }
`,
    );
    const run = inProject(process.execPath, ['--enable-source-maps', 'trace.mjs']);
    expect(run.status).toBe(0);
    const frames = run.stdout.split('\n').filter((line) => line.trim().startsWith('at '));
    expect(frames[0]).toContain(resolve(installed, 'src', 'admission'));
    expect(frames[0]).toMatch(/\.ts:\d+:\d+\)$/);
  });
});

describe('the installed package in a folder whose path holds a space', () => {
  // A copy of the installed package without its built library, as npm leaves it where it did not
  // run the install step. Its dependencies resolve from `root`, as the installed one's do.
  const spaced = join(root, 'my project', 'node_modules', 'omni-runtime');
  const library = join(spaced, 'native', 'build', 'libomni_fixture.so');
  beforeAll(() => {
    cpSync(installed, spaced, {
      recursive: true,
      filter: (from) => from !== join(installed, 'native', 'build'),
    });
  });

  /** Runs a command line as a user pasting it into a POSIX shell would. */
  const inShell = (line: string) => spawnSync('sh', ['-c', line], { cwd: project, env: withoutCuda });

  it('names, in OMNI_ERR_LIBRARY_NOT_FOUND, a build command that runs as printed', () => {
    rmSync(join(spaced, 'native', 'build'), { recursive: true, force: true });
    writeFileSync(
      join(project, 'missing.mjs'),
      `const { selectBackend } = await import(process.argv[2]);
try { selectBackend('fixture'); } catch (err) { console.log(JSON.stringify({ code: err.code, message: err.message })); }
`,
    );
    const entry = pathToFileURL(join(spaced, 'dist', 'src', 'index.js')).href;
    const run = inProject(process.execPath, ['missing.mjs', entry]);
    expect(run.status, run.stderr).toBe(0);
    const { code, message } = JSON.parse(run.stdout) as { code: string; message: string };
    expect(code).toBe('OMNI_ERR_LIBRARY_NOT_FOUND');
    const command = /build it with: (.+) \(needs cc/.exec(message)?.[1];
    expect(command, message).toBeDefined();
    expect(inShell(command!).status).toBe(0);
    expect(existsSync(library)).toBe(true);
  });

  it('names, when its install step finds no C compiler, a build command that runs as printed', () => {
    rmSync(join(spaced, 'native', 'build'), { recursive: true, force: true });
    const install = spawnSync(process.execPath, [join(spaced, 'scripts', 'build-native.mjs'), '--optional'], {
      cwd: spaced,
      env: { ...withoutCuda, CC: 'false' },
      encoding: 'utf8',
    });
    expect(install.status, install.stderr).toBe(0); // a missing compiler must not fail an install
    expect(existsSync(library)).toBe(false);
    const command = /and run: (.+)$/m.exec(install.stderr)?.[1];
    expect(command, install.stderr).toBeDefined();
    expect(inShell(command!).status).toBe(0);
    expect(existsSync(library)).toBe(true);
  });
});
