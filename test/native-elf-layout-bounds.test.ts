/**
 * dataSymbols at the edges of the ELF layout it reads: a name exactly as long as it looks for, a
 * .dynsym that is the last section, a reserved section index in a file whose table is as long as
 * a header can count, and a section table whose entries are narrower than a section header.
 * Each file is made here, byte by byte: the compiler makes none of these.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dataSymbols } from '../src/native/elf-symbols.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-elf-layout-');
const omni = (name: string): boolean => name.startsWith('omni_');

const SHT_PROGBITS = 1;
const SHT_STRTAB = 3;
const SHT_SYMTAB = 2;
const SHT_DYNSYM = 11;
const SHF_EXECINSTR = 4n;
const STT_NOTYPE = 0;
const STT_OBJECT = 1;
/** elf-symbols.ts's MAX_NAME: the longest name it looks for, in bytes. */
const MAX_NAME = 1024;

interface Layout {
  /** The one symbol's name and its st_info type and section index. */
  name: string;
  type: number;
  shndx: number;
  /** How many sections the table has (the null one, .dynsym, .dynstr and fillers). */
  shnum?: number;
  /** Where .dynsym is in the table (.dynstr is at 1, or 2 when .dynsym is there). */
  dynsymAt?: number;
  /** Filler sections marked executable. */
  code?: number[];
  /** The symbol table's section type: SHT_DYNSYM unless a test says otherwise. */
  tableType?: number;
  /** The header's e_shentsize, and the stride the entries are written at. */
  entrySize?: number;
}

/** An ELF64 LE file of one symbol, laid out as `layout` says; its path. */
function elfFile(layout: Layout): string {
  const {
    name,
    type,
    shndx,
    shnum = 4,
    dynsymAt = 1,
    code = [],
    entrySize = 64,
    tableType = SHT_DYNSYM,
  } = layout;
  const strtabAt = dynsymAt === 1 ? 2 : 1;
  const names = Buffer.from(`\0${name}\0`, 'latin1');
  const symOff = 64;
  const strOff = symOff + 2 * 24;
  const shoff = Math.ceil((strOff + names.length) / 8) * 8;
  const elf = Buffer.alloc(shoff + shnum * entrySize);
  elf.writeUInt32BE(0x7f454c46, 0);
  elf[4] = 2; // ELFCLASS64
  elf[5] = 1; // ELFDATA2LSB
  elf.writeBigUInt64LE(BigInt(shoff), 0x28);
  elf.writeUInt16LE(entrySize, 0x3a);
  elf.writeUInt16LE(shnum, 0x3c);
  // Symbol 0 is the null symbol; symbol 1 is the one named.
  elf.writeUInt32LE(1, symOff + 24);
  elf[symOff + 24 + 4] = type;
  elf.writeUInt16LE(shndx, symOff + 24 + 6);
  names.copy(elf, strOff);
  const section = (i: number, kind: number, flags: bigint, offset: number, size: number, link = 0) => {
    const at = shoff + i * entrySize;
    elf.writeUInt32LE(kind, at + 4);
    elf.writeBigUInt64LE(flags, at + 8);
    elf.writeBigUInt64LE(BigInt(offset), at + 24);
    elf.writeBigUInt64LE(BigInt(size), at + 32);
    elf.writeUInt32LE(link, at + 40);
  };
  for (let i = 1; i < shnum; i++) section(i, SHT_PROGBITS, code.includes(i) ? SHF_EXECINSTR : 0n, 0, 0);
  section(dynsymAt, tableType, 0n, symOff, 2 * 24, strtabAt);
  section(strtabAt, SHT_STRTAB, 0n, strOff, names.length);
  const path = join(tempDir(), 'lib.so');
  writeFileSync(path, elf);
  return path;
}

describe('dataSymbols at the edges of the layout', () => {
  it('a name of MAX_NAME bytes is read; one byte longer is not looked for', () => {
    const longest = `omni_${'a'.repeat(MAX_NAME - 5)}`;
    expect(dataSymbols(elfFile({ name: longest, type: STT_OBJECT, shndx: 1 }), omni)).toEqual([longest]);
    expect(dataSymbols(elfFile({ name: `${longest}a`, type: STT_OBJECT, shndx: 1 }), omni)).toEqual([]);
  });

  it('a .dynsym that is the last section is read; a last section of another type is not', () => {
    const lastTable = { name: 'omni_abi_version', type: STT_OBJECT, shndx: 1, shnum: 5, dynsymAt: 4 };
    const path = elfFile(lastTable);
    expect(dataSymbols(path, omni)).toEqual(['omni_abi_version']);
    // Found by its type, not its place: a last section of another type (.symtab) is no .dynsym.
    const symtab = elfFile({ ...lastTable, tableType: SHT_SYMTAB });
    expect(dataSymbols(symtab, omni)).toEqual([]);
  });

  it('an untyped name at SHN_LORESERVE is data, even where the table has a code section of that index', () => {
    // 0xffff sections: 0xff00 is inside the table, so only its being reserved says "no section".
    const path = elfFile({
      name: 'omni_abi_version',
      type: STT_NOTYPE,
      shndx: 0xff00,
      shnum: 0xffff,
      code: [0xff00],
    });
    expect(dataSymbols(path, omni)).toEqual(['omni_abi_version']);
  });

  it('the same untyped name in a code section is not data (the file above is read as laid out)', () => {
    const path = elfFile({ name: 'omni_abi_version', type: STT_NOTYPE, shndx: 3, code: [3] });
    expect(dataSymbols(path, omni)).toEqual([]);
  });

  it('entries narrower than a section header: [] (cannot tell), not read at their stride', () => {
    const path = elfFile({ name: 'omni_abi_version', type: STT_OBJECT, shndx: 1, entrySize: 48 });
    expect(dataSymbols(path, omni)).toEqual([]);
    // The same file with full-width entries is read.
    expect(dataSymbols(elfFile({ name: 'omni_abi_version', type: STT_OBJECT, shndx: 1 }), omni)).toEqual([
      'omni_abi_version',
    ]);
  });
});
