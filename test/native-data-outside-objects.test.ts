/**
 * An ABI name whose address no loaded object holds is no function of a library: a thread-local
 * variable's (dlsym gives this thread's copy, in a TLS block; glibc's dladdr never answers with a
 * thread-local symbol, so its type cannot say). The mappings refuse it where they can be read;
 * where they cannot (no /proc), dladdr1 finding no object must, or the load calls into the TLS
 * block (SIGSEGV). Loaded in a child process: unfixed, the load kills it.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CORE_SYMBOLS } from '../src/native/bindings.js';
import { inData } from '../src/native/data-addresses.js';
import { defaultLibraryPath } from '../src/native/index.js';
import { koffi } from '../src/native/koffi.js';
import { onGlibc } from './fixtures/glibc.js';
import { loadInChild } from './fixtures/load-in-child.js';
import { compileLibrary } from './fixtures/stand-in-library.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-outside-objects-');

/** A stand-in CUDA library whose omni_abi_version is a thread-local int. */
function threadLocalVersion(): string {
  const lines = CORE_SYMBOLS.map((name) => {
    if (name === 'omni_abi_version') return 'API __thread int omni_abi_version = 1;';
    if (name === 'omni_backend_name') return 'API const char *omni_backend_name(void) { return "cuda"; }';
    return `API int ${name}(void) { return 1; }`;
  });
  return compileLibrary(join(tempDir(), 'libomni_tls.so'), lines);
}

describe.skipIf(!onGlibc)('an ABI name in no loaded object', () => {
  it('a thread-local variable is data to the dynamic linker', () => {
    const ffi = koffi();
    const handle = ffi.load(threadLocalVersion());
    try {
      // Looked at only, never called.
      expect(inData([ffi.address(handle.symbol('omni_abi_version'))])).toEqual([true]);
    } finally {
      handle.unload();
    }
  });

  it('with the mappings unreadable: OMNI_ERR_LIBRARY_NOT_FOUND at load, the process lives', () => {
    const refused = { stdout: 'OMNI_ERR_LIBRARY_NOT_FOUND', status: 0, signal: null };
    expect(loadInChild(threadLocalVersion(), 'cuda', { mapsUnreadable: true })).toEqual(refused);
  });

  it("with the mappings unreadable, this package's own libraries load", () => {
    const loaded = { stdout: 'loaded', status: 0, signal: null };
    const mapsUnreadable = { mapsUnreadable: true };
    expect(loadInChild(defaultLibraryPath('fixture'), 'fixture', mapsUnreadable)).toEqual(loaded);
    expect(loadInChild(defaultLibraryPath('cuda'), 'cuda', mapsUnreadable)).toEqual(loaded);
  });
});
