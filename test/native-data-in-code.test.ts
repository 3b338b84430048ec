/**
 * An ABI name exported as read-only data where that data shares the code's executable mapping:
 * linked without separate code segments (`-z noseparate-code`, GNU ld's default before 2.31 and
 * still on some targets, and gold's), .rodata is mapped with .text. The mappings alone
 * passed it as code and the load called into it (SIGILL); the dynamic symbol's own type, as the
 * loaded library has it, says data. Loaded in a child process: unfixed, the load kills it.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import { CORE_SYMBOLS } from '../src/native/bindings.js';
import { inCode } from '../src/native/code-addresses.js';
import { inData } from '../src/native/data-addresses.js';
import { koffi } from '../src/native/koffi.js';
import { onGlibc } from './fixtures/glibc.js';
import { loadInChild } from './fixtures/load-in-child.js';
import { compileLibrary } from './fixtures/stand-in-library.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-data-in-code-');

const CONST_DATA: Record<string, string> = {
  omni_abi_version: 'const int omni_abi_version = 1;',
  omni_backend_name: 'const char omni_backend_name[] = "cuda";',
};

/** A stand-in CUDA library, linked with .rodata in its code segment, `data` a const variable. */
function library(data: string): string {
  const lines = CORE_SYMBOLS.map((name) => {
    if (name === data) return `API ${CONST_DATA[name]}`;
    if (name === 'omni_abi_version') return 'API int omni_abi_version(void) { return 1; }';
    if (name === 'omni_backend_name') return 'API const char *omni_backend_name(void) { return "cuda"; }';
    return `API int ${name}(void) { return 1; }`;
  });
  return compileLibrary(join(tempDir(), `libomni_rodata_${data}.so`), lines, ['-Wl,-z,noseparate-code']);
}

// glibc only: elsewhere (musl lacks dladdr1) the check cannot tell, and the load calls the data.
describe.skipIf(!onGlibc)('an ABI name as const data in an executable mapping', () => {
  it.each(Object.keys(CONST_DATA))('%s: OMNI_ERR_LIBRARY_NOT_FOUND at load, the process lives', (name) => {
    const path = library(name);
    // The case itself: the mappings call it code (else this would test nothing new). Only
    // looked at here, never called.
    const ffi = koffi();
    const handle = ffi.load(path);
    try {
      const address = ffi.address(handle.symbol(name));
      expect(inCode([address])).toEqual([true]);
      expect(inData([address])).toEqual([true]);
    } finally {
      handle.unload();
    }
    expect(loadInChild(path)).toEqual({ stdout: 'OMNI_ERR_LIBRARY_NOT_FOUND', status: 0, signal: null });
  });

  it('the same library with every name a function loads (functions are not data)', () => {
    const path = library('none');
    expect(loadInChild(path)).toEqual({ stdout: 'loaded', status: 0, signal: null });
  });

  it('every name the fixture binds is typed as code, not data', () => {
    const ffi = koffi();
    const handle = ffi.load(buildFixture().path);
    try {
      const addresses = CORE_SYMBOLS.map((name) => ffi.address(handle.symbol(name)));
      expect(inData(addresses)).toEqual(CORE_SYMBOLS.map(() => false));
    } finally {
      handle.unload();
    }
  });
});
