/**
 * Whether addresses lie in a symbol the dynamic linker itself types as data. An executable
 * mapping is no proof of code: a library linked without separate code segments (GNU ld's default
 * before 2.31 and still on some targets, gold's, `-z noseparate-code`) maps .rodata with .text,
 * so a `const int omni_abi_version = 1;` lies in an executable mapping, and was called into
 * (SIGILL, SIGSEGV). dladdr1(RTLD_DL_SYMENT) hands back the dynamic symbol that holds an
 * address, as the loaded library has it; one typed as an object (or common, or thread-local)
 * is data. An untyped one (an assembler label) says nothing: the mapping decides
 * (code-addresses.ts).
 *
 * Where dladdr1 cannot be bound (no glibc: musl lacks it; not Linux) it cannot tell: it answers
 * undefined and the caller goes on by the mappings alone.
 */
import type { LibraryHandle } from 'koffi';
import { koffi } from './koffi.js';

/** st_info's low nibble (ELF symbol types) for data. */
const STT_OBJECT = 1;
const STT_COMMON = 5;
const STT_TLS = 6;
const RTLD_DL_SYMENT = 1;

type Dladdr1 = (address: bigint, info: Record<string, unknown>, extra: [unknown], flags: number) => number;

/** Bound once per thread (koffi's functions belong to the thread that bound them); null: cannot. */
let bound: { dladdr1: Dladdr1; stInfoOffset: number } | null | undefined;

/** For each address, whether its dynamic symbol is typed as data; undefined when it cannot tell. */
export function inDataSymbol(addresses: readonly bigint[]): boolean[] | undefined {
  const api = bind();
  if (api === null) return undefined;
  const ffi = koffi();
  return addresses.map((address) => {
    const extra: [unknown] = [null];
    if (api.dladdr1(address, {}, extra, RTLD_DL_SYMENT) === 0 || extra[0] === null) return false;
    const type = (ffi.decode(extra[0], api.stInfoOffset, 'uint8') as number) & 0xf;
    return type === STT_OBJECT || type === STT_COMMON || type === STT_TLS;
  });
}

function bind(): { dladdr1: Dladdr1; stInfoOffset: number } | null {
  if (bound !== undefined) return bound;
  bound = null;
  if (process.platform !== 'linux') return bound;
  const ffi = koffi();
  // glibc 2.34 moved it from libdl into libc; either is already loaded in a Node process.
  for (const name of ['libc.so.6', 'libdl.so.2']) {
    let lib: LibraryHandle;
    try {
      lib = ffi.load(name);
    } catch {
      continue;
    }
    try {
      const info = ffi.struct({ fname: 'void *', fbase: 'void *', sname: 'void *', saddr: 'void *' });
      const dladdr1 = lib.func('dladdr1', 'int', [
        'void *',
        ffi.out(ffi.pointer(info)),
        ffi.out(ffi.pointer('void *')),
        'int',
      ]) as Dladdr1;
      // Elf64_Sym: name (4), then info; Elf32_Sym: name, value, size (4 each), then info.
      bound = { dladdr1, stInfoOffset: ffi.sizeof('void *') === 8 ? 4 : 12 };
      return bound;
    } catch {
      lib.unload();
    }
  }
  return bound;
}
