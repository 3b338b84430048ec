/**
 * An untyped ABI name (STT_NOTYPE) whose section index names no section of the file: a reserved
 * index (SHN_XINDEX, a processor's own) or one past the section table. dlsym resolves it all the
 * same (base + value), so a label in .data given such an index was called into its bytes and the
 * load died (SIGSEGV). Its address lies outside code: it is refused as data.
 * Run in a child process: on a loader without the check the load crashes the process.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadInChild } from './fixtures/load-in-child.js';
import { compileLibrary } from './fixtures/stand-in-library.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-untyped-index-');

/** A stand-in CUDA library: omni_abi_version an untyped label in .data, every other name a function. */
function labelLibrary(): string {
  const names = ['omni_open', 'omni_close', 'omni_upload_weights', 'omni_linear_gelu', 'omni_stats'];
  const lines = [
    'API const char *omni_backend_name(void) { return "cuda"; }',
    'API const char *omni_last_error(void) { return ""; }',
    ...names.map((name) => `API int ${name}(void) { return 1; }`),
    `__asm__(${JSON.stringify('.data\n.globl omni_abi_version\nomni_abi_version: .long 1\n.text\n')});`,
  ];
  return compileLibrary(join(tempDir(), 'liblabel.so'), lines);
}

/** A copy of `path` with omni_abi_version's .dynsym section index set to `shndx`. */
function withIndex(path: string, shndx: (shnum: number) => number): string {
  const elf = readFileSync(path);
  const shoff = Number(elf.readBigUInt64LE(0x28));
  const shnum = elf.readUInt16LE(0x3c);
  const header = (i: number): number => shoff + i * 64;
  let dynsym = 0;
  while (elf.readUInt32LE(header(dynsym) + 4) !== 11) dynsym++;
  const offset = Number(elf.readBigUInt64LE(header(dynsym) + 24));
  const size = Number(elf.readBigUInt64LE(header(dynsym) + 32));
  const names = Number(elf.readBigUInt64LE(header(elf.readUInt32LE(header(dynsym) + 40)) + 24));
  let patched = 0;
  for (let at = offset; at < offset + size; at += 24) {
    const start = names + elf.readUInt32LE(at);
    if (elf.toString('latin1', start, elf.indexOf(0, start)) !== 'omni_abi_version') continue;
    elf.writeUInt16LE(shndx(shnum), at + 6);
    patched++;
  }
  expect(patched).toBe(1);
  const out = join(tempDir(), 'libpatched.so');
  writeFileSync(out, elf);
  return out;
}

describe('an untyped ABI name whose section index names no section', () => {
  const cases: Array<[string, (shnum: number) => number]> = [
    ['SHN_XINDEX', () => 0xffff],
    ['a processor-reserved index (SHN_X86_64_LCOMMON)', () => 0xff02],
    ['an index past the section table', (shnum) => shnum + 3],
  ];

  it.each(cases)('%s: the load refuses it coded, and the process lives', (_, shndx) => {
    expect(loadInChild(withIndex(labelLibrary(), shndx))).toEqual({
      stdout: 'OMNI_ERR_LIBRARY_NOT_FOUND',
      status: 0,
      signal: null,
    });
  });
});
