/**
 * DESIGN.md, "Memory ordering": whatever a thread wrote before releasing a permit is visible to
 * the thread that next acquires it, because every Atomics operation is sequentially consistent
 * ("keep it that way"). That holds only while src/admission reads and writes its shared words
 * through Atomics: a plain `i32[STATE_I32]` read or write on the hot path orders nothing, and on
 * x86 a cross-thread test would still pass, so the guard is read from the sources. Each plain
 * index of a typed array in src/admission is listed here with why it needs no Atomics; a new
 * one fails until it is shown to be one of those.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';

const DIR = join(packageRoot, 'src', 'admission');
const TYPED_ARRAY = '(?:Big)?(?:Int|Uint|Float)(?:8|16|32|64)Array';

/** Plain indexes that order nothing, and need not: file -> accesses, each with its why. */
const PLAIN: Record<string, string[]> = {
  // The header, written while the buffer is still this thread's alone (before any attach) and
  // read only after it has been handed over by postMessage, which orders the two.
  'admission-buffer.ts': [
    'i32[ID_I32]',
    'i32[REQUESTS_I32]',
    'i32[SLOTS_I32]',
    'i32[SHIFT_I32]',
    'new Float64Array(buffer, 0, 8)[UNIT_CEILING_F64]',
    'new Float64Array(buffer, 0, 8)[UNIT_CEILING_F64]',
  ],
  'claims.ts': [
    // The id, as above: set before the buffer is shared, never changed.
    'this.#header[ID_I32]',
    // A claim's cost: written by the taker after its CAS took the slot and before the claim
    // leaves by postMessage; read by a releaser before the CAS that decides whether it was
    // its claim's (a stale copy's read loses that CAS and is discarded); read by held() only
    // once every other thread has stopped (ClaimTable, "Memory ordering").
    'this.#costs[slot]',
    'this.#costs[slot]',
    'this.#costs[slot]',
  ],
};

function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
}

/** The names a file gives its typed arrays: fields, parameters, locals and their aliases. */
function viewNames(code: string): Set<string> {
  const names = new Set<string>();
  for (const [, name] of code.matchAll(new RegExp(String.raw`([#\w]+)\s*:\s*${TYPED_ARRAY}\b`, 'g'))) {
    names.add(name!);
  }
  for (const [, name] of code.matchAll(new RegExp(String.raw`([#\w]+)\s*=\s*new ${TYPED_ARRAY}\(`, 'g'))) {
    names.add(name!);
  }
  for (const [, alias, field] of code.matchAll(/\b(?:const|let)\s+(\w+)\s*=\s*this\.(#\w+)\s*;/g)) {
    if (names.has(field!)) names.add(alias!);
  }
  return names;
}

/** Every plain index of a typed array in `code`, as written. */
function plainIndexes(code: string): string[] {
  const names = [...viewNames(code)].map((name) => name.replace(/[$#]/g, '\\$&'));
  const viewed = names.length === 0 ? '(?!)' : `(?:this\\.)?(?:${names.join('|')})`;
  const pattern = new RegExp(
    String.raw`(?:(?<![\w$#.])${viewed}|new ${TYPED_ARRAY}\([^)]*\))\s*\[[^\]]*\]`,
    'g',
  );
  return [...code.matchAll(pattern)].map(([access]) => access);
}

describe('src/admission reaches its shared memory only through Atomics', () => {
  const files = readdirSync(DIR).filter((name) => name.endsWith('.ts'));

  it('finds the views it checks (an empty search would pass anything)', () => {
    const code = withoutComments(readFileSync(join(DIR, 'bounded-admission.ts'), 'utf8'));
    expect([...viewNames(code)]).toEqual(expect.arrayContaining(['#i32', '#u64', 'i32', 'u64']));
    const claims = withoutComments(readFileSync(join(DIR, 'claims.ts'), 'utf8'));
    expect([...viewNames(claims)]).toEqual(
      expect.arrayContaining(['#header', '#words', '#costs', '#blockHeld', 'words', 'blockHeld']),
    );
    expect(plainIndexes('const i32 = new Int32Array(b); i32[STATE_I32] = 1;')).toEqual(['i32[STATE_I32]']);
  });

  it.each(files)('%s: no plain index but the listed ones', (file) => {
    const code = withoutComments(readFileSync(join(DIR, file), 'utf8'));
    expect(plainIndexes(code)).toEqual(PLAIN[file] ?? []);
  });
});
