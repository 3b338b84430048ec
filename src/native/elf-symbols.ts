/**
 * Which of a shared library's exported symbols are data, read from its file (the ELF dynamic
 * symbol table) before the library is loaded. dlsym, and so koffi, gives an address and no type:
 * a library that exports an ABI name as a variable (`int omni_abi_version = 1;`) was called into
 * its bytes, and the process died (SIGSEGV) instead of refusing the library. A name is data when
 * its symbol type says so (OBJECT, COMMON, TLS) or, having no type (an assembler label, a
 * --defsym), when it is absolute or lies outside the library's code (a section not executable).
 *
 * Reads only the ELF header, the section headers and the .dynsym/.dynstr sections (a CUDA
 * library can be hundreds of MiB), each once: its work is bounded by the file's size, however the
 * file is made. Anything it cannot read as a 64-bit little-endian ELF file with a .dynsym
 * (another format, a stripped section table, a truncated file, no regular file at all) reports
 * nothing: the load then goes on as before, and dlopen says what it thinks of the file.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

const SHT_DYNSYM = 11;
const SHF_EXECINSTR = 4n;
const SHN_UNDEF = 0;
/** The first reserved section index: none from here on names a section of the table. */
const SHN_LORESERVE = 0xff00;
/** Symbol types (st_info & 0xf) that name data, never code: OBJECT, COMMON, TLS. */
const DATA_TYPES = new Set([1, 5, 6]);
/** A symbol without a type: an assembler label, a linker script's or --defsym's name. */
const STT_NOTYPE = 0;
const SYM_SIZE = 24;
const SECTION_SIZE = 64;
/** Far above any real .dynsym/.dynstr: a corrupt size must not make this allocate gigabytes. */
const MAX_TABLE = 256 * 1024 * 1024;
/**
 * The longest name looked for, in bytes: far above the loader's own (under 40). Each symbol's
 * name is sought within this many bytes of its start: sought to the table's end, a string table
 * with no NUL in it cost every symbol the table's length (a crafted 42 MB file: minutes; the
 * cost grew with the square of the size).
 */
const MAX_NAME = 1024;

/** The names matching `wanted` that the file at `path` defines as data; [] when it cannot tell. */
export function dataSymbols(path: string, wanted: (name: string) => boolean): string[] {
  let fd: number;
  try {
    // Non-blocking: a named pipe's open would wait for a writer (for ever, and the thread with
    // it); it is refused below, by what the open found. No effect on a regular file's reads.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return [];
  }
  try {
    return readDataSymbols(fd, wanted);
  } catch {
    return [];
  } finally {
    closeSync(fd);
  }
}

/**
 * `length` bytes at `offset`, both from the file's own fields. A range past the file's end is
 * corrupt: refused before its buffer is allocated (a size field may say anything up to 2^64, and
 * one under MAX_TABLE allocated that much, zero-filled, for a file of a few KiB).
 */
function read(fd: number, fileSize: number, offset: bigint | number, length: bigint | number): Buffer {
  const at = Number(offset);
  const n = Number(length);
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_TABLE || at > fileSize - n) throw new RangeError('size');
  const buf = Buffer.alloc(n);
  if (readSync(fd, buf, 0, n, at) !== n) throw new RangeError('short read');
  return buf;
}

function readDataSymbols(fd: number, wanted: (name: string) => boolean): string[] {
  const stat = fstatSync(fd);
  // The caller's check that a regular file is there came before this open, and may be stale.
  if (!stat.isFile()) return [];
  const fileSize = stat.size;
  const header = read(fd, fileSize, 0, 64);
  // \x7fELF, ELFCLASS64, ELFDATA2LSB.
  if (header.readUInt32BE(0) !== 0x7f454c46 || header[4] !== 2 || header[5] !== 1) return [];
  const shoff = header.readBigUInt64LE(0x28);
  const shentsize = header.readUInt16LE(0x3a);
  const shnum = header.readUInt16LE(0x3c);
  if (shoff === 0n || shnum === 0 || shentsize < SECTION_SIZE) return [];
  const sections = read(fd, fileSize, shoff, shentsize * shnum);
  const section = (i: number) => {
    const at = i * shentsize;
    return {
      type: sections.readUInt32LE(at + 4),
      flags: sections.readBigUInt64LE(at + 8),
      offset: sections.readBigUInt64LE(at + 24),
      size: sections.readBigUInt64LE(at + 32),
      link: sections.readUInt32LE(at + 40),
    };
  };
  // An object has one .dynsym (the ELF spec's rule): the first is the one. Reading every section
  // that claims the type read a table of 65,535 claims as 65,535 tables, and named each data
  // symbol once per claim.
  let index = 0;
  while (index < shnum && section(index).type !== SHT_DYNSYM) index++;
  if (index === shnum) return [];
  const dynsym = section(index);
  if (dynsym.link >= shnum) return [];
  const strtab = section(dynsym.link);
  const symbols = read(fd, fileSize, dynsym.offset, dynsym.size);
  const names = read(fd, fileSize, strtab.offset, strtab.size);
  // Defined (not SHN_UNDEF) and data: typed so, or untyped and not in code. An untyped name is
  // called as readily as a typed one: a label in .data, or an absolute address, crashed the load.
  const isData = (type: number, shndx: number): boolean => {
    if (shndx === SHN_UNDEF) return false;
    if (DATA_TYPES.has(type)) return true;
    if (type !== STT_NOTYPE) return false;
    // A reserved index (SHN_ABS, SHN_COMMON, SHN_XINDEX, a processor's own) or one past the
    // table names no code section this file shows; dlsym still hands out an address for it.
    if (shndx >= SHN_LORESERVE || shndx >= shnum) return true;
    return (section(shndx).flags & SHF_EXECINSTR) === 0n;
  };
  const found: string[] = [];
  for (let at = 0; at + SYM_SIZE <= symbols.length; at += SYM_SIZE) {
    if (!isData(symbols[at + 4]! & 0xf, symbols.readUInt16LE(at + 6))) continue;
    const start = symbols.readUInt32LE(at);
    if (start >= names.length) continue;
    const length = names.subarray(start, start + MAX_NAME + 1).indexOf(0);
    if (length === -1) continue;
    const name = names.toString('latin1', start, start + length);
    if (wanted(name)) found.push(name);
  }
  return found;
}
