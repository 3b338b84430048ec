/**
 * A library the loader refuses is unloaded at once. Left to koffi, its mapping stayed in the
 * process until a garbage collection happened to collect the handle, and dlopen answers a load
 * of the same path with the mapping it already has (it matches by name before it opens the
 * file): the library rebuilt as the refusal said ("rebuild it with ...") was refused again, with
 * the old library's answer, for as long as no collection had run.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import { CORE_SYMBOLS } from '../src/native/bindings.js';
import { ABI_VERSION, defaultLibraryPath, loadNativeLibrary } from '../src/native/index.js';
import { compileLibrary } from './fixtures/stand-in-library.js';
import { tempDirs } from './fixtures/temp-dirs.js';
import { thrownCode } from './fixtures/thrown.js';

const tempDir = tempDirs('omni-refused-');

/** Whether this process has the file at `path` mapped. */
function mapped(path: string): boolean {
  return readFileSync('/proc/self/maps', 'latin1').includes(path);
}

/** A stand-in CUDA library (ABI 1, named "cuda") at `path`, exporting `names` as functions. */
function standIn(path: string, names: readonly string[]): void {
  const lines = names.map((name) =>
    name === 'omni_backend_name'
      ? 'API const char *omni_backend_name(void) { return "cuda"; }'
      : `API int ${name}(void) { return 1; }`,
  );
  // To a new file renamed over the old, as a build does: the old one may still be mapped.
  execFileSync('mv', ['-f', compileLibrary(`${path}.new`, lines), path]);
}

describe.skipIf(process.platform !== 'linux')('a refused library is unloaded', () => {
  beforeAll(() => {
    buildFixture();
  });

  it('one of another ABI version, rebuilt at its path, then loads (not the old one again)', () => {
    const outDir = tempDir();
    const { path } = buildFixture({ outDir, defines: ['OMNI_ABI_VERSION=999'] });
    expect(thrownCode(() => loadNativeLibrary('fixture', { path }))).toBe('OMNI_ERR_ABI_MISMATCH');
    expect(mapped(path)).toBe(false);
    buildFixture({ outDir, force: true });
    expect(loadNativeLibrary('fixture', { path }).abiVersion).toBe(ABI_VERSION);
  });

  it('one that lacks part of the ABI, completed at its path, then loads', () => {
    const path = join(tempDir(), 'libomni_partial.so');
    standIn(
      path,
      CORE_SYMBOLS.filter((name) => name !== 'omni_stats'),
    );
    expect(thrownCode(() => loadNativeLibrary('cuda', { path }))).toBe('OMNI_ERR_LIBRARY_NOT_FOUND');
    expect(mapped(path)).toBe(false);
    standIn(path, CORE_SYMBOLS);
    expect(loadNativeLibrary('cuda', { path }).backendName).toBe('cuda');
  });

  it("the other backend's library, replaced at its path by the right one, then loads", () => {
    const path = join(tempDir(), 'libomni_cuda.so');
    copyFileSync(defaultLibraryPath('fixture'), path);
    expect(thrownCode(() => loadNativeLibrary('cuda', { path }))).toBe('OMNI_ERR_LIBRARY_NOT_FOUND');
    expect(mapped(path)).toBe(false);
    standIn(path, CORE_SYMBOLS);
    expect(loadNativeLibrary('cuda', { path }).backendName).toBe('cuda');
  });

  it('one without omni_abi_version is not left mapped either', () => {
    const path = join(tempDir(), 'libomni_foreign.so');
    standIn(path, ['omni_something_else']);
    expect(thrownCode(() => loadNativeLibrary('cuda', { path }))).toBe('OMNI_ERR_LIBRARY_NOT_FOUND');
    expect(mapped(path)).toBe(false);
  });
});
