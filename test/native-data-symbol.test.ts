/**
 * A library whose ABI names are exported as data, not functions (a foreign library that happens
 * to define `int omni_abi_version = 1;`): calling one jumps into its bytes, which killed the
 * whole process (SIGSEGV) at load, or at the first call. Before it calls anything, the loader
 * looks each bound name up and refuses, coded, a library where one lies outside code.
 * Run in a child process: on a loader without the check the load crashes the process.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORE_SYMBOLS, FIXTURE_SYMBOLS } from '../src/native/bindings.js';
import { loadNativeLibrary } from '../src/native/index.js';
import { loadInChild } from './fixtures/load-in-child.js';
import { compileLibrary } from './fixtures/stand-in-library.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-data-symbol-');

const FUNCTIONS: Record<string, string> = {
  omni_abi_version: 'int omni_abi_version(void) { return 1; }',
  omni_backend_name: 'const char *omni_backend_name(void) { return "cuda"; }',
  omni_open: 'int omni_open(void) { return 4; }',
};
const DATA: Record<string, string> = {
  omni_abi_version: 'int omni_abi_version = 1;',
  omni_backend_name: 'const char omni_backend_name[] = "cuda";',
  omni_open: 'int omni_open = 4;',
};
const REST = ['omni_close', 'omni_upload_weights', 'omni_linear_gelu', 'omni_stats', 'omni_last_error'];

/**
 * A stand-in CUDA library with `data` exported as a variable and every other ABI name a function;
 * `extra` lines are more exports of its own.
 */
function library(data: string, extra: readonly string[] = []): string {
  const lines = Object.keys(FUNCTIONS).map((name) => `API ${name === data ? DATA[name] : FUNCTIONS[name]}`);
  for (const name of REST) lines.push(`API int ${name}(void) { return 1; }`);
  for (const line of extra) lines.push(`API ${line}`);
  return compileLibrary(join(tempDir(), `libomni_data_${data}.so`), lines);
}

/**
 * A stand-in CUDA library whose omni_abi_version has no symbol type (STT_NOTYPE): defined by
 * `asm` (an assembler label) or by the link `flags` (--defsym); every other ABI name a function.
 */
function untypedLibrary(asm: string, flags: readonly string[] = []): string {
  const lines = Object.entries(FUNCTIONS)
    .filter(([name]) => name !== 'omni_abi_version')
    .map(([, definition]) => `API ${definition}`);
  for (const name of REST) lines.push(`API int ${name}(void) { return 1; }`);
  if (asm !== '') lines.push(`__asm__(${JSON.stringify(asm)});`);
  return compileLibrary(join(tempDir(), 'libomni_untyped.so'), lines, flags);
}

/** omni_abi_version as an untyped label in .data. */
const DATA_LABEL = '.data\n.globl omni_abi_version\nomni_abi_version: .long 1\n.text\n';
/** omni_abi_version as an absolute address, set by the linker: no code of the library's. */
const ABSOLUTE = ['-Wl,--defsym=omni_abi_version=0x1234'];

const FIXTURE_HOOKS = [
  'omni_fixture_fail_alloc_after',
  'omni_fixture_fail_copy_after',
  'omni_fixture_fail_sync_after',
  'omni_fixture_live_bytes',
  'omni_fixture_reference_linear_gelu',
];

/** A stand-in fixture library: every name a function but omni_fixture_inject_fatal, data. */
function fixtureWithDataHook(): string {
  const lines = [
    'API int omni_abi_version(void) { return 1; }',
    'API const char *omni_backend_name(void) { return "fixture"; }',
    'API int omni_open(void) { return 4; }',
    ...[...REST, ...FIXTURE_HOOKS].map((name) => `API int ${name}(void) { return 1; }`),
    'API int omni_fixture_inject_fatal = 0;',
  ];
  return compileLibrary(join(tempDir(), 'libomni_fixture_data_hook.so'), lines);
}

describe('an ABI name exported as data', () => {
  it.each(Object.keys(DATA))('%s: OMNI_ERR_LIBRARY_NOT_FOUND at load, the process lives', (name) => {
    expect(loadInChild(library(name))).toEqual({
      stdout: 'OMNI_ERR_LIBRARY_NOT_FOUND',
      status: 0,
      signal: null,
    });
  });

  // No symbol type is no proof of code: the load called these and died (SIGSEGV).
  it.each([
    ['an untyped label in .data', () => untypedLibrary(DATA_LABEL)],
    ['an absolute (--defsym) address', () => untypedLibrary('', ABSOLUTE)],
  ])('omni_abi_version as %s: OMNI_ERR_LIBRARY_NOT_FOUND at load, the process lives', (_, make) => {
    expect(loadInChild(make())).toEqual({ stdout: 'OMNI_ERR_LIBRARY_NOT_FOUND', status: 0, signal: null });
  });

  it('the same library with every name a function loads (the check refuses data only)', () => {
    expect(loadInChild(library('none'))).toEqual({ stdout: 'loaded', status: 0, signal: null });
  });

  it('a fixture hook as data, loaded as the fixture (which binds its hooks): refused', () => {
    expect(loadInChild(fixtureWithDataHook(), 'fixture')).toEqual({
      stdout: 'OMNI_ERR_LIBRARY_NOT_FOUND',
      status: 0,
      signal: null,
    });
  });

  // docs/api.md: refused for an ABI name as data. Data of its own under the prefix is never called
  // (a build id; the fixture's hooks, which a CUDA load never binds): it was refused all the same.
  it('data of its own named omni_*, not an ABI name, loads', () => {
    const extra = ['const char omni_build_id[] = "abc";', 'int omni_fixture_live_bytes = 0;'];
    expect(loadInChild(library('none', extra))).toEqual({ stdout: 'loaded', status: 0, signal: null });
  });
});

describe('the names the check reads', () => {
  // Kept beside bindCore and bindFixture by hand: a name bound but missing here would be
  // called as a function whatever the file says it is.
  it('are every name the fixture load binds', () => {
    const lib = loadNativeLibrary('fixture');
    expect(Object.keys(lib.raw).sort()).toEqual([...CORE_SYMBOLS].sort());
    expect(Object.keys(lib.fixture ?? {}).sort()).toEqual([...FIXTURE_SYMBOLS].sort());
  });
});
