/**
 * dataSymbols on files that are not a plain ELF64 LE library, or are one with a corrupt section
 * table: each answers correctly or "cannot tell" ([]), never throws, and never allocates beyond
 * the file (a corrupt size once made it allocate up to 256 MiB, zero-filled, for a 16 KiB file).
 * And the real libraries: read as they are, none refused.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { dataSymbols } from '../src/native/elf-symbols.js';
import { nativeBuildDir } from '../src/paths.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-elf-edges-');
const omni = (name: string): boolean => name.startsWith('omni_');

/** A library that defines omni_abi_version as data and omni_open as a function. */
function dataLibrary(): string {
  const dir = tempDir();
  const source = join(dir, 'lib.c');
  writeFileSync(
    source,
    '#define API __attribute__((visibility("default")))\n' +
      'API int omni_abi_version = 1;\nAPI int omni_open(void) { return 4; }\n',
  );
  const path = join(dir, 'libdata.so');
  execFileSync(process.env.CC || 'cc', ['-shared', '-fPIC', source, '-o', path], { stdio: 'pipe' });
  return path;
}

const SHT_DYNSYM = 11;
const SHT_PROGBITS = 1;

/** The library's bytes and where its section headers are. */
function layout(path: string) {
  const elf = readFileSync(path);
  const shoff = Number(elf.readBigUInt64LE(0x28));
  const shnum = elf.readUInt16LE(0x3c);
  const header = (i: number): number => shoff + i * 64;
  const ofType = (type: number): number => {
    for (let i = 0; i < shnum; i++) if (elf.readUInt32LE(header(i) + 4) === type) return i;
    throw new Error(`no section of type ${type}`);
  };
  const index = ofType(SHT_DYNSYM);
  return { elf, shnum, header, index, dynsym: header(index), progbits: ofType(SHT_PROGBITS) };
}

/** The largest Buffer.alloc, and all of them together, while `read` runs. */
function allocations<T>(read: () => T): { result: T; largest: number; total: number } {
  let largest = 0;
  let total = 0;
  const alloc = Buffer.alloc.bind(Buffer);
  const spy = vi.spyOn(Buffer, 'alloc').mockImplementation((size, ...rest) => {
    largest = Math.max(largest, size);
    total += size;
    return alloc(size, ...rest);
  });
  try {
    return { result: read(), largest, total };
  } finally {
    spy.mockRestore();
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('dataSymbols on odd and corrupt files', () => {
  it('a symlink to the library is read through: the data name is found', () => {
    const path = dataLibrary();
    const link = join(tempDir(), 'link.so');
    symlinkSync(path, link);
    expect(dataSymbols(path, omni)).toEqual(['omni_abi_version']);
    expect(dataSymbols(link, omni)).toEqual(['omni_abi_version']);
  });

  it('each corruption: [] (cannot tell), no throw, no allocation beyond the file', () => {
    const { elf, shnum, header, index, dynsym, progbits } = layout(dataLibrary());
    const dir = tempDir();
    type Corrupt = (b: Buffer) => Buffer | undefined;
    const u16 =
      (at: number, v: number): Corrupt =>
      (b) =>
        void b.writeUInt16LE(v, at);
    const u32 =
      (at: number, v: number): Corrupt =>
      (b) =>
        void b.writeUInt32LE(v, at);
    const u64 =
      (at: number, v: bigint): Corrupt =>
      (b) =>
        void b.writeBigUInt64LE(v, at);
    const cases: Array<[string, Corrupt]> = [
      ['no ELF magic', (b) => b.fill(0, 0, 1)],
      ['a linker script', () => Buffer.from('/* GNU ld script */\nGROUP ( libc.so.6 )\n')],
      ['32-bit', (b) => b.fill(1, 4, 5)],
      ['big-endian', (b) => b.fill(2, 5, 6)],
      ['e_shnum 0', u16(0x3c, 0)],
      // SHN_XNUM: the section count is in section 0's sh_size; not read, so cannot tell.
      ['SHN_XNUM', (b) => u16(0x3c, 0)(b) ?? u64(header(0) + 32, BigInt(shnum))(b)],
      ['e_shentsize 63', u16(0x3a, 63)],
      ['e_shentsize 65535', u16(0x3a, 65535)],
      ['e_shoff 2^64 - 1', u64(0x28, 2n ** 64n - 1n)],
      ['.dynsym linked to a code section', u32(dynsym + 40, progbits)],
      ['.dynsym linked to itself', u32(dynsym + 40, index)],
      ['.dynsym linked past the table', u32(dynsym + 40, 0xffffffff)],
      ['.dynsym size 2^63', u64(dynsym + 32, 2n ** 63n)],
      ['.dynsym size 200 MiB', u64(dynsym + 32, 200n << 20n)],
      ['.dynsym offset 2^53 + 1', u64(dynsym + 24, 2n ** 53n + 1n)],
      ['.dynsym offset 2^62', u64(dynsym + 24, 2n ** 62n)],
      ['cut to 100 bytes', (b) => b.subarray(0, 100)],
      ['cut before its section headers', (b) => b.subarray(0, header(0) + 10)],
    ];
    const got = cases.map(([what, corrupt]) => {
      const copy = Buffer.from(elf);
      const bytes = corrupt(copy) ?? copy;
      const path = join(dir, what.replaceAll(/\W/g, '_'));
      writeFileSync(path, bytes);
      let found: unknown;
      const { largest } = allocations(() => {
        try {
          found = dataSymbols(path, omni);
        } catch (err) {
          found = `threw ${(err as Error).message}`;
        }
      });
      return { what, found, withinFile: largest <= Math.max(64, bytes.length) };
    });
    expect(got).toEqual(cases.map(([what]) => ({ what, found: [], withinFile: true })));
  });

  it("the symbol's own fields: COMMON is data, an undefined (imported) one is not this file's", () => {
    const { elf, dynsym, header } = layout(dataLibrary());
    const symbols = Number(elf.readBigUInt64LE(dynsym + 24));
    const count = Number(elf.readBigUInt64LE(dynsym + 32)) / 24;
    const names = Number(elf.readBigUInt64LE(header(elf.readUInt32LE(dynsym + 40)) + 24));
    const name = (at: number): string => {
      const start = names + elf.readUInt32LE(at);
      return elf.toString('latin1', start, elf.indexOf(0, start));
    };
    const entry = [...Array(count).keys()]
      .map((i) => symbols + 24 * i)
      .find((at) => name(at) === 'omni_abi_version');
    expect(entry).toBeDefined();
    const at = entry!;
    const dir = tempDir();
    const patched = (what: string, patch: (b: Buffer) => void): string => {
      const bytes = Buffer.from(elf);
      patch(bytes);
      writeFileSync(join(dir, what), bytes);
      return join(dir, what);
    };
    // st_info: binding in the high nibble, type in the low one (5: STT_COMMON).
    const common = patched('common', (b) => b.writeUInt8((b[at + 4]! & 0xf0) | 5, at + 4));
    expect(dataSymbols(common, omni)).toEqual(['omni_abi_version']);
    const imported = patched('undefined', (b) => b.writeUInt16LE(0, at + 6));
    expect(dataSymbols(imported, omni)).toEqual([]);
  });

  it('every section header a copy of .dynsym: the table is read once, its data name named once', () => {
    const { elf, shnum, header, dynsym } = layout(dataLibrary());
    const strtab = elf.readUInt32LE(dynsym + 40);
    for (let i = 1; i < shnum; i++) {
      if (i !== strtab) elf.copy(elf, header(i), dynsym, dynsym + 64);
    }
    const path = join(tempDir(), 'claims.so');
    writeFileSync(path, elf);
    // Each claim was read as a table of its own: the name came once per claim, and the reads
    // added up to the table's size times the section count (65,535 claims: hours).
    const { result, total } = allocations(() => dataSymbols(path, omni));
    const size = (at: number): number => Number(elf.readBigUInt64LE(at + 32));
    const once = 64 + shnum * 64 + size(dynsym) + size(header(strtab));
    expect(shnum).toBeGreaterThan(10);
    expect({ result, readOnce: total <= once }).toEqual({ result: ['omni_abi_version'], readOnce: true });
  });

  it('a folder: [] (dlopen then says what it is)', () => {
    expect(dataSymbols(tempDir(), omni)).toEqual([]);
  });
});

describe('dataSymbols on real libraries', () => {
  it("this package's libraries define no omni_* data", () => {
    const built = readdirSync(nativeBuildDir).filter((f) => f.endsWith('.so'));
    expect(built).toContain('libomni_fixture.so');
    for (const file of built)
      expect({ file, found: dataSymbols(join(nativeBuildDir, file), omni) }).toEqual({ file, found: [] });
  });

  it('libc read whole: its data symbols (stdin, environ) found, a function (malloc) not', () => {
    const libc = ['/lib/x86_64-linux-gnu/libc.so.6', '/usr/lib/x86_64-linux-gnu/libc.so.6'].find((p) => {
      try {
        return statSync(p).isFile();
      } catch {
        return false;
      }
    });
    expect(libc).toBeDefined();
    const names = new Set(['stdin', 'environ', 'malloc']);
    expect(dataSymbols(libc!, (name) => names.has(name)).sort()).toEqual(['environ', 'stdin']);
  });
});
