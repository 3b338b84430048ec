/**
 * Where an ABI name resolves decides, not what the file's tables say: the load looks each bound
 * name up (dlsym, which also searches the libraries this one depends on) and refuses one whose
 * address is not in an executable mapping. A file-table check missed these, and the load called
 * into data (SIGSEGV): a name left undefined here and defined as data by a dependency, a symbol
 * typed FUNC that lies in .data. Run in a child process: a loader without the check dies.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import koffi from 'koffi';
import { describe, expect, it } from 'vitest';
import { CORE_SYMBOLS } from '../src/native/bindings.js';
import { inCode } from '../src/native/code-addresses.js';
import { defaultLibraryPath } from '../src/native/index.js';
import { onGlibc } from './fixtures/glibc.js';
import { loadInChild } from './fixtures/load-in-child.js';
import { compileLibrary } from './fixtures/stand-in-library.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-symbol-in-code-');

/** Every CUDA ABI function but omni_abi_version, whose definition (if any) is `version`. */
function cudaSource(version: string): string[] {
  const rest = CORE_SYMBOLS.filter((name) => name !== 'omni_abi_version' && name !== 'omni_backend_name');
  return [
    version,
    'API const char *omni_backend_name(void) { return "cuda"; }',
    ...rest.map((name) => `API int ${name}(void) { return 1; }`),
  ];
}

function compile(dir: string, name: string, lines: readonly string[], flags: readonly string[] = []): string {
  return compileLibrary(join(dir, `lib${name}.so`), lines, flags);
}

const refused = { stdout: 'OMNI_ERR_LIBRARY_NOT_FOUND', status: 0, signal: null };

describe('an ABI name that resolves outside code', () => {
  it('left undefined, defined as data by a library it depends on: refused, the process lives', () => {
    const dir = tempDir();
    compile(dir, 'dep', ['API int omni_abi_version = 1;']);
    // --no-as-needed: the library uses nothing of dep's, and the link would drop it otherwise.
    const flags = ['-Wl,--no-as-needed', '-L', dir, '-ldep', `-Wl,-rpath,${dir}`];
    expect(loadInChild(compile(dir, 'omni', cudaSource(''), flags))).toEqual(refused);
  });

  it('a function (typed FUNC) placed in .data: refused, the process lives', () => {
    const version = 'API __attribute__((section(".data"))) int omni_abi_version(void) { return 1; }';
    expect(loadInChild(compile(tempDir(), 'omni', cudaSource(version)))).toEqual(refused);
  });

  it('data, in a file whose section header table is stripped (e_shnum 0): refused, the process lives', () => {
    const path = compile(tempDir(), 'omni', cudaSource('API int omni_abi_version = 1;'));
    const elf = readFileSync(path);
    elf.writeBigUInt64LE(0n, 0x28); // e_shoff
    elf.writeUInt16LE(0, 0x3c); // e_shnum: dlopen reads program headers only
    writeFileSync(path, elf);
    expect(loadInChild(path)).toEqual(refused);
  });

  it('a thread-local variable: refused, the process lives', () => {
    const path = compile(tempDir(), 'omni', cudaSource('API __thread int omni_abi_version = 1;'));
    expect(loadInChild(path)).toEqual(refused);
  });

  it('the same library with omni_abi_version a function loads', () => {
    const version = 'API int omni_abi_version(void) { return 1; }';
    expect(loadInChild(compile(tempDir(), 'omni', cudaSource(version)))).toEqual({
      stdout: 'loaded',
      status: 0,
      signal: null,
    });
  });

  it("this package's own libraries load", () => {
    const loaded = { stdout: 'loaded', status: 0, signal: null };
    expect(loadInChild(defaultLibraryPath('fixture'), 'fixture')).toEqual(loaded);
    expect(loadInChild(defaultLibraryPath('cuda'))).toEqual(loaded);
  });
});

// libc.so.6 by that name, and /proc: glibc Linux only.
describe.skipIf(!onGlibc)('inCode (/proc/self/maps)', () => {
  it("libc's malloc is in code; its environ (data) and address 0 are not", () => {
    const libc = koffi.load('libc.so.6');
    try {
      const addresses = [koffi.address(libc.symbol('malloc')), koffi.address(libc.symbol('environ')), 0n];
      expect(inCode(addresses)).toEqual([true, false, false]);
    } finally {
      libc.unload();
    }
  });
});
