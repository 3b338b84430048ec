/**
 * The package in a project where koffi has no native module: npm installs koffi's binary through
 * an optional dependency (@koromix/koffi-<platform>), which a project can lack (installed with
 * --omit=optional, or from a lock file made on another platform), and koffi's own install script,
 * which could build one, is not run unless allowed (npm 11 asks first). BoundedAdmission and
 * Runtime need no native code and must still load; native work must fail with a coded error.
 *
 * The layout: a copy of this package and of koffi (without a binary) in a node_modules of
 * their own, beside links to the other dependencies, so nothing resolves this checkout's
 * @koromix binary (koffi looks for it by module resolution and beside its own folder).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const root = tempDirs('omni-package-koffi-missing-')();
const modules = join(root, 'node_modules');
const copy = join(modules, 'omni-runtime');
const entry = pathToFileURL(join(copy, 'dist', 'src', 'index.js')).href;

beforeAll(() => {
  for (const part of ['package.json', 'dist/src', 'dist/workers', 'native/build/libomni_fixture.so']) {
    cpSync(join(packageRoot, part), join(copy, part), { recursive: true });
  }
  // koffi as npm unpacks it (its JavaScript; a binary would only be in build/, from its script).
  const koffi = join(packageRoot, 'node_modules', 'koffi');
  cpSync(koffi, join(modules, 'koffi'), { recursive: true, filter: (from) => from !== join(koffi, 'build') });
  const { dependencies } = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  for (const name of Object.keys(dependencies)) {
    if (name === 'koffi') continue;
    mkdirSync(join(modules, name, '..'), { recursive: true });
    symlinkSync(join(packageRoot, 'node_modules', name), join(modules, name), 'dir');
  }
});

/** Runs an ES module's text in `root`; its exit status and output. */
function script(name: string, text: string): { status: number | null; stdout: string; stderr: string } {
  writeFileSync(join(root, name), text);
  const run = spawnSync(process.execPath, [join(root, name)], { cwd: root, encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe("the package where koffi's native module is missing", () => {
  it('is really missing here: koffi itself cannot load', () => {
    const run = script(
      'koffi.mjs',
      `await import(${JSON.stringify(pathToFileURL(join(modules, 'koffi', 'index.js')).href)});`,
    );
    expect(run.status).not.toBe(0);
  });

  it('still imports, and runs BoundedAdmission and a Runtime with a worker that imports it too', () => {
    writeFileSync(
      join(root, 'worker.mjs'),
      `import { defineWorker } from ${JSON.stringify(entry)};
export default defineWorker(async (n) => n * 2);
`,
    );
    const run = script(
      'main.mjs',
      `import { BoundedAdmission, Runtime } from ${JSON.stringify(entry)};
const admission = new BoundedAdmission({ requests: 1 });
const rt = await Runtime.start({ worker: new URL('./worker.mjs', import.meta.url), threads: 1 });
const doubled = await rt.run(21);
await rt.close();
console.log(JSON.stringify({ capacity: admission.report().capacity, doubled }));
`,
    );
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ capacity: 1, doubled: 42 });
  });

  it('refuses native work with OMNI_ERR_LIBRARY_NOT_FOUND', () => {
    const run = script(
      'native.mjs',
      `import { LinearRuntime, loadNativeLibrary, selectBackend } from ${JSON.stringify(entry)};
const codes = [];
for (const attempt of [() => selectBackend('fixture'), () => selectBackend('auto'), () => loadNativeLibrary('fixture')]) {
  try { attempt(); codes.push('loaded'); } catch (err) { codes.push(err.code); }
}
try { await LinearRuntime.start({ threads: 1 }); codes.push('started'); } catch (err) { codes.push(err.code); }
console.log(JSON.stringify(codes));
`,
    );
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(Array(4).fill('OMNI_ERR_LIBRARY_NOT_FOUND'));
  });
});
