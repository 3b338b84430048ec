/**
 * The API reference's "API at a glance" (docs/api.md, linked from the README) names every export
 * of both entry points: a user reads the docs, not the .d.ts, and an export added without a word
 * there is one nobody finds. The export lists are read from the sources (index files are only
 * export lists, by convention), so a new export fails this test until the page names it. Its
 * "Errors" table, likewise, lists
 * every code the sources raise: a user matches on codes, and one missing there is one nobody
 * handles.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';

const read = (path: string): string => readFileSync(join(packageRoot, path), 'utf8');

/** The names an index file exports: its `export { ... }` lists and what its `export *` modules declare. */
function exportedNames(indexPath: string): string[] {
  const source = read(indexPath);
  const names: string[] = [];
  for (const [, list] of source.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const item of (list ?? '').split(',')) {
      const name = item.trim().replace(/^type\s+/, '');
      if (name !== '') names.push(name.split(/\s+as\s+/).at(-1) ?? name);
    }
  }
  for (const [, from] of source.matchAll(/export\s+\*\s+from\s+'([^']+)'/g)) {
    const module = join(indexPath, '..', (from ?? '').replace(/\.js$/, '.ts'));
    for (const [, name] of read(module).matchAll(
      /^export\s+(?:declare\s+)?(?:abstract\s+)?(?:class|function|const|let|type|interface|enum)\s+(\w+)/gm,
    )) {
      if (name !== undefined) names.push(name);
    }
  }
  return [...new Set(names)];
}

/** A section of the API reference (docs/api.md), from its heading up to the next of its level. */
function apiSection(heading: string): string {
  const api = read('docs/api.md');
  const start = api.indexOf(`## ${heading}\n`);
  if (start < 0) return '';
  const next = api.indexOf('\n## ', start + 1);
  return api.slice(start, next < 0 ? undefined : next);
}

/** Inline code spans of the section, where a name must appear to count as documented. */
function codeSpans(section: string): string[] {
  return [...section.matchAll(/`([^`]+)`/g)].map(([, span]) => span ?? '');
}

describe('docs/api.md: API at a glance', () => {
  const spans = codeSpans(apiSection('API at a glance'));
  const named = (name: string): boolean => spans.some((span) => new RegExp(`\\b${name}\\b`).test(span));

  it.each([
    ['omni-runtime', 'src/index.ts'],
    ['omni-runtime/serve', 'src/serve/index.ts'],
  ])('names every export of %s', (_entry, indexPath) => {
    const names = exportedNames(indexPath);
    // The reader of the source lists must find something, or an empty list passes this test.
    expect(names.length).toBeGreaterThan(10);
    expect(names.filter((name) => !named(name))).toEqual([]);
  });
});

/** Every file under `dir` (relative to the package root) whose name ends in `.ts`. */
function sourceFiles(dir: string): string[] {
  return readdirSync(join(packageRoot, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(dir, file));
}

describe('docs/api.md: Errors', () => {
  it('lists every OMNI_ERR_ code the sources raise, and none that they do not', () => {
    const raised = new Set<string>();
    for (const file of [...sourceFiles('src'), ...sourceFiles('workers')]) {
      for (const [code] of read(file).matchAll(/OMNI_ERR_[A-Z_]+[A-Z]/g)) raised.add(code);
    }
    // The table writes a row's later codes short (`_BAD_REQUEST` for OMNI_ERR_BAD_REQUEST).
    const listed = new Set<string>();
    for (const [, name] of apiSection('Errors').matchAll(/`(?:OMNI_ERR)?(_[A-Z_]+[A-Z])`/g)) {
      listed.add(`OMNI_ERR${name}`);
    }
    // The readers must find both, or two empty sets pass this test.
    expect(raised.size).toBeGreaterThan(25);
    expect([...raised].filter((code) => !listed.has(code)).sort()).toEqual([]);
    expect([...listed].filter((code) => !raised.has(code)).sort()).toEqual([]);
  });
});
