/**
 * Whether addresses lie in data, as the dynamic linker places them. An executable mapping is no
 * proof of code: a library linked without separate code segments (GNU ld's default before 2.31
 * and still on some targets, gold's, `-z noseparate-code`) maps .rodata with .text, so a
 * `const int omni_abi_version = 1;` lies in an executable mapping, and was called into (SIGILL,
 * SIGSEGV). dladdr1(RTLD_DL_SYMENT) hands back the dynamic symbol that holds an address, as the
 * loaded library has it; one typed as an object (or common) is data. An address no loaded object
 * holds is no function of a library either: a thread-local variable's (glibc's dladdr never
 * answers with a thread-local symbol; dlsym gives its thread's copy, in a TLS block), which
 * without this was called into wherever the mappings could not be read. An untyped symbol (an
 * assembler label), or none in an object, says nothing: the mapping decides (code-addresses.ts).
 *
 * Where dladdr1 cannot be bound (no glibc: musl lacks it; not Linux) it cannot tell: it answers
 * undefined and the caller goes on by the mappings alone.
 */
import type { LibraryHandle } from 'koffi';
import { koffi } from './koffi.js';

/** st_info's low nibble (ELF symbol types) for data. */
const STT_OBJECT = 1;
const STT_COMMON = 5;
const RTLD_DL_SYMENT = 1;

type Dladdr1 = (address: bigint, info: Record<string, unknown>, extra: [unknown], flags: number) => number;

/** Bound once per thread (koffi's functions belong to the thread that bound them); null: cannot. */
let bound: { dladdr1: Dladdr1; stInfoOffset: number } | null | undefined;

/**
 * For each address, whether it lies in a dynamic symbol typed as data or in no loaded object;
 * undefined when it cannot tell.
 */
export function inData(addresses: readonly bigint[]): boolean[] | undefined {
  const api = bind();
  if (api === null) return undefined;
  const ffi = koffi();
  return addresses.map((address) => {
    const extra: [unknown] = [null];
    if (api.dladdr1(address, {}, extra, RTLD_DL_SYMENT) === 0) return true;
    if (extra[0] === null) return false;
    const type = (ffi.decode(extra[0], api.stInfoOffset, 'uint8') as number) & 0xf;
    return type === STT_OBJECT || type === STT_COMMON;
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
