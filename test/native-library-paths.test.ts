import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import { LinearRuntime, type LinearRuntimeOptions } from '../src/index.js';
import { defaultLibraryPath, FixtureFaults, loadNativeLibrary } from '../src/native/index.js';
import { codeOf } from './fixtures/runtime-harness.js';
import { thrownCode } from './fixtures/thrown.js';

describe('native libraries from a path of your own', () => {
  const dir = mkdtempSync(join(tmpdir(), 'omni-libs-'));
  // A copy, so the path differs from the default one the loader caches for other tests.
  const fixtureCopy = join(dir, 'libomni_fixture.so');
  const cudaBuilt = defaultLibraryPath('cuda');
  beforeAll(() => {
    buildFixture();
    copyFileSync(defaultLibraryPath('fixture'), fixtureCopy);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function start(options: LinearRuntimeOptions): Promise<LinearRuntime> {
    return LinearRuntime.start({ threads: 1, inFeatures: 8, outFeatures: 4, ...options });
  }

  it('LinearRuntime runs on the library it is given and says which it loaded', async () => {
    const lr = await start({ backend: 'fixture', libraries: { fixture: fixtureCopy } });
    try {
      expect(lr.libraryPath).toBe(fixtureCopy);
      const y = await lr.run(new Float32Array(2 * 8).fill(0.5));
      expect(y.length).toBe(2 * 4);
    } finally {
      await lr.close();
    }
  });

  it('every worker thread loads the given library, not the package build', async () => {
    // Each copy of the library keeps its own live-byte counter: the workers' contexts show up in the copy's.
    const copyFaults = new FixtureFaults(loadNativeLibrary('fixture', { path: fixtureCopy }));
    const before = copyFaults.liveBytes();
    const lr = await start({ backend: 'fixture', threads: 2, libraries: { fixture: fixtureCopy } });
    try {
      await lr.run(new Float32Array(2 * 8).fill(0.5));
      expect(copyFaults.liveBytes()).toBeGreaterThan(before);
    } finally {
      await lr.close();
    }
    expect(copyFaults.liveBytes()).toBe(before);
  });

  it('a library path that comes through a prototype is the one loaded, as other options are read', async () => {
    const lr = await start({ backend: 'fixture', libraries: Object.create({ fixture: fixtureCopy }) });
    try {
      expect(lr.libraryPath).toBe(fixtureCopy);
    } finally {
      await lr.close();
    }
  });

  it('without libraries it loads the package build', async () => {
    const lr = await start({ backend: 'fixture' });
    try {
      expect(lr.libraryPath).toBe(defaultLibraryPath('fixture'));
    } finally {
      await lr.close();
    }
  });

  it("a library given for the other backend is refused, in either order, and doesn't poison the path", () => {
    // A copy no test has loaded yet: the first load itself must check the name, not only the cache.
    const unseen = join(dir, 'libomni_unseen.so');
    copyFileSync(defaultLibraryPath('fixture'), unseen);
    expect(thrownCode(() => loadNativeLibrary('cuda', { path: unseen }))).toBe('OMNI_ERR_LIBRARY_NOT_FOUND');
    expect(thrownCode(() => loadNativeLibrary('cuda', { path: fixtureCopy }))).toBe(
      'OMNI_ERR_LIBRARY_NOT_FOUND',
    );
    expect(loadNativeLibrary('fixture', { path: fixtureCopy }).backendName).toBe('fixture');
    // Now cached as the fixture: asking for it as cuda is still refused.
    expect(thrownCode(() => loadNativeLibrary('cuda', { path: fixtureCopy }))).toBe(
      'OMNI_ERR_LIBRARY_NOT_FOUND',
    );
  });

  it.skipIf(!existsSync(cudaBuilt))('the CUDA library given as the fixture is refused by name', () => {
    expect(thrownCode(() => loadNativeLibrary('fixture', { path: cudaBuilt }))).toBe(
      'OMNI_ERR_LIBRARY_NOT_FOUND',
    );
  });

  it("'auto' probes the given cuda path and falls back to the fixture, naming what it found", async () => {
    const lr = await start({ backend: 'auto', libraries: { cuda: fixtureCopy } });
    try {
      expect(lr.backend).toBe('fixture');
      expect(lr.libraryPath).toBe(defaultLibraryPath('fixture'));
      expect(lr.backendReason).toContain(fixtureCopy);
    } finally {
      await lr.close();
    }
  });

  it('a given library that is missing rejects start with OMNI_ERR_LIBRARY_NOT_FOUND', async () => {
    const missing = join(dir, 'nowhere', 'libomni_fixture.so');
    expect(await codeOf(start({ backend: 'fixture', libraries: { fixture: missing } }))).toBe(
      'OMNI_ERR_LIBRARY_NOT_FOUND',
    );
    expect(await codeOf(start({ backend: 'cuda', libraries: { cuda: missing } }))).toBe(
      'OMNI_ERR_LIBRARY_NOT_FOUND',
    );
  });

  it('a library that passes the ABI handshake but lacks another symbol is OMNI_ERR_LIBRARY_NOT_FOUND', async () => {
    const source = join(dir, 'handshake-only.c');
    writeFileSync(
      source,
      '__attribute__((visibility("default"))) int omni_abi_version(void) { return 1; }\n',
    );
    const partial = join(dir, 'libomni_partial.so');
    execFileSync(process.env.CC || 'cc', ['-shared', '-fPIC', source, '-o', partial], { stdio: 'pipe' });
    expect(thrownCode(() => loadNativeLibrary('fixture', { path: partial }))).toBe(
      'OMNI_ERR_LIBRARY_NOT_FOUND',
    );
    expect(thrownCode(() => loadNativeLibrary('cuda', { path: partial }))).toBe('OMNI_ERR_LIBRARY_NOT_FOUND');
    expect(await codeOf(start({ backend: 'fixture', libraries: { fixture: partial } }))).toBe(
      'OMNI_ERR_LIBRARY_NOT_FOUND',
    );
  });

  it('malformed libraries are OMNI_ERR_INVALID_ARGUMENT', async () => {
    // { cuda: '' } on the fixture backend too: that path is never loaded, so only this check sees it.
    const bad: unknown[] = [
      'libomni_fixture.so',
      null,
      { gpu: fixtureCopy },
      { fixture: '' },
      { cuda: 7 },
      { cuda: '' },
    ];
    for (const libraries of bad) {
      expect(await codeOf(start({ backend: 'fixture', libraries } as LinearRuntimeOptions))).toBe(
        'OMNI_ERR_INVALID_ARGUMENT',
      );
    }
  });

  it('loadNativeLibrary options that are not an object, or a path that is not a non-empty string: OMNI_ERR_INVALID_ARGUMENT', () => {
    for (const options of [null, 'libomni_fixture.so', { path: 7 }, { path: '' }, { path: null }]) {
      expect({ options, code: thrownCode(() => loadNativeLibrary('fixture', options as never)) }).toEqual({
        options,
        code: 'OMNI_ERR_INVALID_ARGUMENT',
      });
    }
  });
});
