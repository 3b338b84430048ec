/**
 * dataSymbols ends, whatever is at the path: each case runs in its own process (the read is
 * synchronous, so a hang would hold the test runner's thread with it), which must print its
 * answer and exit 0; one that does not end is killed at the limit (code null). The limit is a
 * bound on a hang, not a measure: each case ends in well under a second, and ran for minutes
 * (a string table) or for ever (a named pipe) before its fix.
 */
import { type ChildProcess, execFile, execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-elf-bounded-');
const MODULE = pathToFileURL(join(packageRoot, 'dist', 'src', 'native', 'elf-symbols.js')).href;
const LIMIT_MS = 30_000;

const running = new Set<ChildProcess>();

afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
});

/** dataSymbols(path) for omni_* names in a process of its own: its exit code and its answer. */
function inChild(path: string): Promise<{ code: number | null; out: string }> {
  const script =
    `const { dataSymbols } = await import(${JSON.stringify(MODULE)});\n` +
    `console.log(JSON.stringify(dataSymbols(${JSON.stringify(path)}, (n) => n.startsWith('omni_'))));\n`;
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--input-type=module', '-e', script],
      { timeout: LIMIT_MS, killSignal: 'SIGKILL' },
      (_err, stdout, stderr) => {
        running.delete(child);
        resolve({ code: child.exitCode, out: `${stdout}${stderr}`.trim() });
      },
    );
    running.add(child);
  });
}

/**
 * An ELF64 header, a .dynsym of `symbols` data symbols (OBJECT, defined) all named at offset 0
 * of a .dynstr of `nameBytes` bytes with no NUL in them.
 */
function noNulNames(symbols: number, nameBytes: number): string {
  const shoff = 64;
  const symOff = shoff + 3 * 64;
  const strOff = symOff + symbols * 24;
  const elf = Buffer.alloc(strOff + nameBytes, 'a');
  elf.fill(0, 0, strOff);
  elf.writeUInt32BE(0x7f454c46, 0);
  elf[4] = 2; // ELFCLASS64
  elf[5] = 1; // ELFDATA2LSB
  elf.writeBigUInt64LE(BigInt(shoff), 0x28);
  elf.writeUInt16LE(64, 0x3a);
  elf.writeUInt16LE(3, 0x3c);
  const section = (i: number, type: number, offset: number, size: number, link: number): void => {
    const at = shoff + i * 64;
    elf.writeUInt32LE(type, at + 4);
    elf.writeBigUInt64LE(BigInt(offset), at + 24);
    elf.writeBigUInt64LE(BigInt(size), at + 32);
    elf.writeUInt32LE(link, at + 40);
  };
  section(1, 11, symOff, symbols * 24, 2); // SHT_DYNSYM, its names in section 2
  section(2, 3, strOff, nameBytes, 0); // SHT_STRTAB
  for (let i = 0; i < symbols; i++) {
    elf[symOff + i * 24 + 4] = 0x11; // GLOBAL OBJECT
    elf.writeUInt16LE(1, symOff + i * 24 + 6); // defined (section 1)
  }
  const path = join(tempDir(), 'no-nul-names.so');
  writeFileSync(path, elf);
  return path;
}

it('a string table without a NUL: each name is sought a bounded way, not to the end', async () => {
  // 400,000 symbols x 32 MiB sought each: 13 TB of memchr before the fix, for a 42 MB file.
  const path = noNulNames(400_000, 32 << 20);
  expect(await inChild(path)).toEqual({ code: 0, out: '[]' });
});

it('a named pipe (no writer ever comes): [] at once, not an open() blocked for ever', async () => {
  const fifo = join(tempDir(), 'fifo.so');
  execFileSync('mkfifo', [fifo]);
  expect(await inChild(fifo)).toEqual({ code: 0, out: '[]' });
});
