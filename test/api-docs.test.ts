/**
 * Every name a user meets in their editor carries a doc comment: the exports of both entry points
 * (package.json "exports": "." and "./serve") and every public member or field of an exported
 * class, interface or object type (options, reports, errors' extra fields). A user hovers before
 * they read the README, and an undocumented option hides its unit, default and range.
 *
 * Read through the TypeScript compiler's API from the built .d.ts, as a consumer's editor reads
 * them: one program over the two entries. Run `npx tsc -p tsconfig.json` first.
 */
import { join } from 'node:path';
import { SyntaxKind } from 'typescript/unstable/ast';
import { API, type Checker, SymbolFlags, type Symbol as TsSymbol, type Type } from 'typescript/unstable/sync';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { writeConsumerTsconfig } from './fixtures/consumer-tsconfig.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const dist = join(packageRoot, 'dist', 'src');
const entries = [join(dist, 'index.d.ts'), join(dist, 'serve', 'index.d.ts')];
const dir = tempDirs('omni-api-docs-')();
writeConsumerTsconfig(dir, entries, { typeRoots: [join(packageRoot, 'node_modules', '@types')] });

const api = new API({ cwd: packageRoot });
afterAll(() => api.close());

/** Declared only in this package's .d.ts (not inherited from Error or another library). */
const ours = (s: TsSymbol): boolean =>
  s.declarations.length > 0 && s.declarations.every((d) => d.path.startsWith(`${dist}/`));

/**
 * Not reachable by a user: `private`/`protected`/`#` members, and members keyed by a unique
 * symbol that no entry exports (the package's internal `[kName]` hooks); a well-known key such
 * as `[Symbol.dispose]` is public.
 */
function hidden(s: TsSymbol, exported: ReadonlySet<string>): boolean {
  return s.declarations.some((handle) => {
    const node = handle.resolve() as
      | {
          modifiers?: readonly { kind: SyntaxKind }[];
          name?: { kind: SyntaxKind; expression?: { kind: SyntaxKind; text?: string } };
        }
      | undefined;
    if (!node) return false;
    const restricted = node.modifiers?.some(
      (m) => m.kind === SyntaxKind.PrivateKeyword || m.kind === SyntaxKind.ProtectedKeyword,
    );
    const name = node.name;
    if (restricted || name?.kind === SyntaxKind.PrivateIdentifier) return true;
    const key = name?.kind === SyntaxKind.ComputedPropertyName ? name.expression : undefined;
    return key?.kind === SyntaxKind.Identifier && !exported.has(key.text ?? '');
  });
}

const documented = (checker: Checker, s: TsSymbol): boolean =>
  checker.getDocumentationCommentOfSymbol(s).trim() !== '';

/** The names (`Owner` or `Owner.member`) a user can reach, and those of them with no doc comment. */
function walk(): { inspected: Set<string>; missing: string[] } {
  const snapshot = api.updateSnapshot({ openProjects: [join(dir, 'tsconfig.json')] });
  const project = snapshot.getProjects()[0];
  if (!project) throw new Error('no project for the two entries');
  const { checker, program } = project;
  const modules = entries.map((file) => {
    const source = program.getSourceFile(file);
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`no module symbol for ${file}`);
    return checker.getExportsOfModule(module);
  });
  const exported = new Set(modules.flat().map((s) => s.name));
  const inspected = new Set<string>();
  const missing = new Set<string>();
  const members = (owner: string, type: Type | undefined): void => {
    if (!type) return;
    if (type.isUnionType() || type.isIntersectionType()) {
      for (const part of type.getTypes() ?? []) members(owner, part);
      return;
    }
    for (const member of checker.getPropertiesOfType(type)) {
      if (member.name === 'prototype' || !ours(member) || hidden(member, exported)) continue;
      inspected.add(`${owner}.${member.name}`);
      if (!documented(checker, member)) missing.add(`${owner}.${member.name}`);
    }
  };
  const seen = new Set<number>();
  for (const symbol of modules.flat()) {
    const target = symbol.flags & SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    if (seen.has(target.id)) continue;
    seen.add(target.id);
    inspected.add(symbol.name);
    if (!documented(checker, target)) missing.add(symbol.name);
    if (target.flags & SymbolFlags.Class) {
      members(symbol.name, checker.getDeclaredTypeOfSymbol(target));
      members(symbol.name, checker.getTypeOfSymbol(target));
    } else if (target.flags & (SymbolFlags.Interface | SymbolFlags.TypeAlias)) {
      members(symbol.name, checker.getDeclaredTypeOfSymbol(target));
    }
  }
  return { inspected, missing: [...missing].sort() };
}

describe('the public API documents itself', () => {
  const { inspected, missing } = walk();

  it('reaches exports, class members, option fields and serve exports', () => {
    // The walk itself: were it to find nothing, the next test would pass on nothing.
    for (const name of ['Runtime', 'Runtime.run', 'Permit.release', 'RunOptions.signal', 'serve']) {
      expect(inspected).toContain(name);
    }
    for (const name of ['ServeOptions.bodyLimit', 'RejectedError.reason', 'Refusal.reason']) {
      expect(inspected).toContain(name);
    }
  });

  it('gives every export and every public member or option field a doc comment', () => {
    expect(missing).toEqual([]);
  });
});
