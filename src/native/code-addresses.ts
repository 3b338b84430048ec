/**
 * Whether addresses lie in code, as this process has it mapped (/proc/self/maps). dlsym, and so
 * koffi, gives an address and no type: a library that exports an ABI name as a variable
 * (`int omni_abi_version = 1;`), or leaves it to a library it depends on that does, is called
 * into those bytes and the process dies (SIGSEGV). Where the name resolves is the runtime's own
 * answer, whatever the file's symbol or section tables claim (or lack): its address must lie in
 * a mapping with execute permission. Necessary, not enough: read-only data may share the code's
 * mapping, which data-addresses.ts catches where the symbol says it is data.
 *
 * Where the maps cannot be read (not Linux, no /proc, an error, a table past the bound) it
 * cannot tell: it answers undefined and the caller goes on as if all were code.
 */
import { closeSync, openSync, readSync } from 'node:fs';

/** Far above a real process's maps (one line each, ~100 bytes, at most vm.max_map_count lines). */
const MAX_MAPS = 64 * 1024 * 1024;
const CHUNK = 64 * 1024;

/** For each address, whether it lies in an executable mapping; undefined when it cannot tell. */
export function inCode(addresses: readonly bigint[]): boolean[] | undefined {
  const maps = readMaps();
  if (maps === undefined) return undefined;
  const found = addresses.map(() => false);
  for (const line of maps.split('\n')) {
    // start-end perms offset dev inode [path]; hex addresses, perms like r-xp.
    const match = /^([0-9a-f]+)-([0-9a-f]+) (\S{4})/.exec(line);
    if (match === null || !match[3]?.includes('x')) continue;
    const start = BigInt(`0x${match[1]}`);
    const end = BigInt(`0x${match[2]}`);
    addresses.forEach((address, i) => {
      if (address >= start && address < end) found[i] = true;
    });
  }
  return found;
}

/** /proc/self/maps read whole (a proc file says size 0: read to its end), or undefined. */
function readMaps(): string | undefined {
  let fd: number;
  try {
    fd = openSync('/proc/self/maps', 'r');
  } catch {
    return undefined;
  }
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(CHUNK);
      const n = readSync(fd, chunk, 0, CHUNK, null);
      if (n === 0) break;
      total += n;
      if (total > MAX_MAPS) return undefined;
      chunks.push(chunk.subarray(0, n));
    }
    return Buffer.concat(chunks).toString('latin1');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}
