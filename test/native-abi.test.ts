import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import {
  ABI_VERSION,
  DEFAULT_WORKSPACE_BYTES,
  DEFAULT_WORKSPACE_COUNT,
  defaultLibraryPath,
  loadNativeLibrary,
  MAX_FEATURES,
  MAX_ROWS,
  MAX_WORKSPACE_COUNT,
  NativeStatus,
} from '../src/native/index.js';
import { builtModuleUrl, packageRoot } from '../src/paths.js';
import { thrown } from './fixtures/thrown.js';

// The handshake checks only the version; the limits and status codes are mirrored by hand in
// src/native/abi.ts, and a drift there would pass that check. The header is the contract.
describe('src/native/abi.ts mirrors native/include/omni.h', () => {
  const header = readFileSync(join(packageRoot, 'native/include/omni.h'), 'utf8');
  const define = (name: string): number => {
    const m = new RegExp(`^#define ${name} (.+)$`, 'm').exec(header);
    if (!m) throw new Error(`omni.h defines no ${name}`);
    // 65536u, ((uint64_t)512u << 20): drop the suffixes and casts, keep the arithmetic.
    const text = (m[1] ?? '').replace(/\(uint64_t\)/g, '').replace(/(\d+)u\b/g, '$1');
    if (!/^[\d\s()<]+$/.test(text)) throw new Error(`cannot read ${name}: ${m[1]}`);
    return Number(
      text
        .replace(/\(|\)/g, '')
        .split('<<')
        .map(Number)
        .reduce((a, b) => a * 2 ** b),
    );
  };

  it('has the same ABI version, limits and workspace defaults', () => {
    expect(define('OMNI_ABI_VERSION')).toBe(ABI_VERSION);
    expect(define('OMNI_MAX_ROWS')).toBe(MAX_ROWS);
    expect(define('OMNI_MAX_FEATURES')).toBe(MAX_FEATURES);
    expect(define('OMNI_MAX_WORKSPACE_COUNT')).toBe(MAX_WORKSPACE_COUNT);
    expect(define('OMNI_DEFAULT_WORKSPACE_COUNT')).toBe(DEFAULT_WORKSPACE_COUNT);
    expect(define('OMNI_DEFAULT_WORKSPACE_BYTES')).toBe(DEFAULT_WORKSPACE_BYTES);
  });

  it('has the same status codes, name for name', () => {
    const codes = Object.fromEntries(
      [...header.matchAll(/^\s*OMNI_(OK|E_\w+) = (\d+)/gm)].map(([, name, value]) => [
        (name ?? '').replace(/^E_/, ''),
        Number(value),
      ]),
    );
    expect(Object.keys(codes).length).toBeGreaterThan(5);
    expect(codes).toEqual({ ...NativeStatus });
  });
});

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

  it('refuses a library of an older ABI version too, not only a newer one', () => {
    const older = ABI_VERSION - 1;
    const { path } = buildFixture({ outDir: join(dir, 'older'), defines: [`OMNI_ABI_VERSION=${older}`] });
    const err = thrown(() => loadNativeLibrary('fixture', { path }));
    expect(err).toMatchObject({ code: 'OMNI_ERR_ABI_MISMATCH', expected: ABI_VERSION, actual: older });
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

  it('a directory is OMNI_ERR_LIBRARY_NOT_FOUND naming the path', () => {
    const path = join(dir, 'libdir.so');
    mkdirSync(path);
    expect(thrown(() => loadNativeLibrary('fixture', { path }))).toMatchObject({
      code: 'OMNI_ERR_LIBRARY_NOT_FOUND',
      path,
    });
  });

  it('loads a library through a symbolic link to it (libfoo.so -> libfoo.so.1, say)', () => {
    // Refused as no regular file when the link itself, not what it names, was looked at.
    const path = join(dir, 'liblinked.so');
    symlinkSync(defaultLibraryPath('fixture'), path);
    expect(loadNativeLibrary('fixture', { path })).toMatchObject({
      backend: 'fixture',
      abiVersion: ABI_VERSION,
    });
  });

  // Loaded in a child process: the load is synchronous, and a loader that hands the pipe to
  // dlopen blocks in its open() for a writer that never comes, which nothing in this process
  // could interrupt. The child's time limit only bounds that hang; the assertions are on what
  // the child reports.
  it.skipIf(process.platform === 'win32')(
    'a named pipe is OMNI_ERR_LIBRARY_NOT_FOUND, not a load blocked for a writer forever',
    () => {
      const path = join(dir, 'libpipe.so');
      execFileSync('mkfifo', [path]);
      const script = `
        const { loadNativeLibrary } = await import(${JSON.stringify(builtModuleUrl('src/native/library.js'))});
        try { loadNativeLibrary('fixture', { path: ${JSON.stringify(path)} }); console.log('{}'); }
        catch (err) { console.log(JSON.stringify({ code: err.code, path: err.path })); }`;
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect({ signal: child.signal, status: child.status, stderr: child.stderr }).toEqual({
        signal: null,
        status: 0,
        stderr: '',
      });
      expect(JSON.parse(child.stdout)).toEqual({ code: 'OMNI_ERR_LIBRARY_NOT_FOUND', path });
    },
  );

  it('an unknown backend name is OMNI_ERR_INVALID_ARGUMENT', () => {
    expect(thrown(() => loadNativeLibrary('tpu' as 'cuda')).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });
});
