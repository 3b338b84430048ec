import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import { ABI_VERSION, defaultLibraryPath, loadNativeLibrary } from '../src/native/index.js';
import { thrown } from './fixtures/thrown.js';

describe('native library loading and the ABI handshake', () => {
  const dir = mkdtempSync(join(tmpdir(), 'omni-abi-'));
  beforeAll(() => {
    buildFixture();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('loads the built fixture, reports its ABI version and name, and caches it per path', () => {
    const lib = loadNativeLibrary('fixture');
    expect(lib).toMatchObject({ backend: 'fixture', backendName: 'fixture', abiVersion: ABI_VERSION });
    expect(lib.path).toBe(defaultLibraryPath('fixture'));
    expect(lib.raw.omni_abi_version()).toBe(ABI_VERSION);
    expect(loadNativeLibrary('fixture', { path: defaultLibraryPath('fixture') })).toBe(lib);
    // A relative path names the same file: the same library, reporting its absolute path.
    expect(loadNativeLibrary('fixture', { path: relative(process.cwd(), lib.path) })).toBe(lib);
  });

  it('refuses a library built with another OMNI_ABI_VERSION, naming both versions', () => {
    const { path } = buildFixture({ outDir: join(dir, 'v999'), defines: ['OMNI_ABI_VERSION=999'] });
    const err = thrown(() => loadNativeLibrary('fixture', { path }));
    expect(err).toMatchObject({ code: 'OMNI_ERR_ABI_MISMATCH', expected: ABI_VERSION, actual: 999 });
    // Refused libraries are not cached: asking again is refused again.
    expect(thrown(() => loadNativeLibrary('fixture', { path })).code).toBe('OMNI_ERR_ABI_MISMATCH');
  });

  it('a missing file is OMNI_ERR_LIBRARY_NOT_FOUND naming the path tried', () => {
    const path = join(dir, 'nowhere', 'libomni_fixture.so');
    expect(thrown(() => loadNativeLibrary('fixture', { path }))).toMatchObject({
      code: 'OMNI_ERR_LIBRARY_NOT_FOUND',
      path: resolve(path),
    });
  });

  it('a file that is not a loadable library is OMNI_ERR_LIBRARY_NOT_FOUND too', () => {
    const path = join(dir, 'libgarbage.so');
    writeFileSync(path, 'not an ELF file');
    expect(thrown(() => loadNativeLibrary('fixture', { path }))).toMatchObject({
      code: 'OMNI_ERR_LIBRARY_NOT_FOUND',
      path,
    });
  });

  it('an unknown backend name is OMNI_ERR_INVALID_ARGUMENT', () => {
    expect(thrown(() => loadNativeLibrary('tpu' as 'cuda')).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });
});
