/**
 * What `npm pack` puts in the published tarball (package.json `files`): everything the package
 * loads at run time, from its entry points, bin and worker threads, with the source maps its
 * modules name and the files its README and reference pages show, and nothing built here or
 * private (native/build,
 * tests, benchmarks).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { linkedPages, markdownLinks } from './fixtures/markdown-links.js';

interface PackResult {
  unpackedSize: number;
  files: { path: string }[];
}

// --ignore-scripts: the list of what is already built (tests run after the build), without
// building again.
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const [packed] = JSON.parse(
  execFileSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: packageRoot,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }),
) as PackResult[];
if (packed === undefined) throw new Error('npm pack --dry-run printed no package');
const files = new Set(packed.files.map((f) => f.path));
const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as {
  main: string;
  types: string;
  bin: Record<string, string>;
  exports: Record<string, string | { types: string; default: string }>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

const strip = (path: string): string => path.replace(/^\.\//, '');

/** Module specifiers a built file names: static and dynamic imports, require(), re-exports, import types. */
function specifiers(file: string): string[] {
  const text = readFileSync(join(packageRoot, file), 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(
    /(?:\bfrom\s*|\b(?:import|require)\s*\(\s*|\bimport\s+)(['"])([^'"\n]+)\1/g,
  )) {
    if (m[2] !== undefined) found.push(m[2]);
  }
  return found;
}

/**
 * The files README.md and the pages it links (docs/*.md) link or show by relative path (those
 * pages, images, LICENSE), as package paths.
 */
const readmePaths = [
  ...new Set(
    linkedPages().flatMap((page) =>
      markdownLinks(page)
        .filter((link) => link.path !== undefined && link.path !== page)
        .map((link) => link.path!),
    ),
  ),
];

/** Whether an installed package carries its own type declarations. */
function shipsTypes(name: string): boolean {
  const dir = join(packageRoot, 'node_modules', name);
  const manifest = readFileSync(join(dir, 'package.json'), 'utf8');
  const { types, typings } = JSON.parse(manifest) as { types?: string; typings?: string };
  return (
    types !== undefined ||
    typings !== undefined ||
    /"types"\s*:/.test(manifest) || // a `types` condition in its exports
    existsSync(join(dir, 'index.d.ts'))
  );
}

// .cjs and .d.cts too: the threads' entry is a CommonJS shim (dist/workers/entry-shim.cjs).
const code = [...files].filter((f) => /\.([mc]?js|d\.[mc]?ts)$/.test(f));
const isDeclaration = (f: string): boolean => /\.d\.[mc]?ts$/.test(f);

describe('the published package', () => {
  it('holds every entry point package.json names', () => {
    const targets = [pkg.main, pkg.types, ...Object.values(pkg.bin)];
    for (const entry of Object.values(pkg.exports)) {
      if (typeof entry === 'string') targets.push(entry);
      else targets.push(entry.types, entry.default);
    }
    for (const target of targets) expect(files, target).toContain(strip(target));
  });

  it('holds the license package.json names', () => {
    expect(JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')).license).toBe('MIT');
    expect(readFileSync(join(packageRoot, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n/);
    expect(files).toContain('LICENSE');
  });

  it('publishes without npm rewriting its package.json', () => {
    // npm publish normalizes the manifest and warns for each field it had to change (a bin
    // target written as './x' is one): the published metadata would differ from the file.
    // --dry-run: nothing leaves this machine; --offline: no registry is asked.
    const run = spawnSync(npm, ['publish', '--dry-run', '--offline', '--ignore-scripts'], {
      cwd: packageRoot,
      encoding: 'utf8',
    });
    expect(run.status).toBe(0);
    expect(run.stderr).not.toContain('auto-corrected');
  });

  it('holds every file its modules import by relative path', () => {
    const missing: string[] = [];
    for (const file of code) {
      for (const spec of specifiers(file)) {
        if (!spec.startsWith('.')) continue;
        let target = posix.normalize(posix.join(posix.dirname(file), spec));
        // A .d.ts names its neighbours by their .js path.
        if (isDeclaration(file) && target.endsWith('.js')) target = target.replace(/\.js$/, '.d.ts');
        if (!files.has(target)) missing.push(`${file} -> ${spec}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('holds the worker modules threads are started from', () => {
    // builtModuleUrl() takes them from dist/ at run time: no import names them.
    const sources = execFileSync('git', ['grep', '-h', '-o', "builtModuleUrl('[^']*')", '--', 'src'], {
      cwd: packageRoot,
      encoding: 'utf8',
    });
    const workers = [...sources.matchAll(/builtModuleUrl\('([^']+)'\)/g)].map((m) => `dist/${m[1]}`);
    expect(workers.length).toBeGreaterThan(0);
    for (const worker of workers) expect(files, worker).toContain(worker);
  });

  it('imports no package it does not depend on', () => {
    const declared = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)]);
    const builtins = new Set(builtinModules);
    const undeclared = new Set<string>();
    for (const file of code.filter((f) => !isDeclaration(f))) {
      for (const spec of specifiers(file)) {
        if (spec.startsWith('.') || spec.startsWith('node:') || builtins.has(spec)) continue;
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
        if (name !== undefined && !declared.has(name)) undeclared.add(`${file} -> ${spec}`);
      }
    }
    expect([...undeclared]).toEqual([]);
  });

  it('depends on every package its public declarations import, each with types a consumer gets', () => {
    // The other package tests resolve packages from this checkout's node_modules, where the
    // dev dependencies are too: a declaration that named a package only those hold, or one whose
    // types come from a dev dependency's @types, would pass there and fail a consumer's tsc
    // (without skipLibCheck). Only what the entry points' types reach counts: a consumer's
    // compiler reads nothing else.
    const reached = new Set<string>();
    const queue = [pkg.types, ...Object.values(pkg.exports).map((e) => (typeof e === 'string' ? e : e.types))]
      .filter((target) => isDeclaration(target))
      .map(strip);
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (reached.has(file) || !files.has(file)) continue;
      reached.add(file);
      for (const spec of specifiers(file)) {
        if (spec.startsWith('.'))
          queue.push(posix.normalize(posix.join(posix.dirname(file), spec)).replace(/\.js$/, '.d.ts'));
      }
    }
    expect(reached.size).toBeGreaterThan(10);
    const builtins = new Set(builtinModules);
    const untyped: string[] = [];
    for (const file of reached) {
      for (const spec of specifiers(file)) {
        if (spec.startsWith('.') || spec.startsWith('node:') || builtins.has(spec)) continue;
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
        if (!(name in pkg.dependencies)) untyped.push(`${file} -> ${spec} (not a dependency)`);
        else if (!shipsTypes(name) && !(`@types/${name}` in pkg.dependencies))
          untyped.push(`${file} -> ${spec} (its types are not in dependencies)`);
      }
    }
    expect(untyped).toEqual([]);
  });

  it('holds the native sources the install step builds from, and no built library', () => {
    const tracked = execFileSync('git', ['ls-files', 'native', 'scripts/build-native.mjs'], {
      cwd: packageRoot,
      encoding: 'utf8',
    })
      .split('\n')
      .filter((f) => /^(native\/(include|common|fixture|cuda)\/|scripts\/build-native\.mjs$)/.test(f));
    expect(tracked.length).toBeGreaterThan(0);
    for (const source of tracked) expect(files, source).toContain(source);
    expect([...files].filter((f) => f.startsWith('native/build/') || f.endsWith('.so'))).toEqual([]);
  });

  it('holds the source map every packed module names, each carrying the sources it maps', () => {
    // A module's last line names its map; an installed package without it makes bundlers and
    // `node --enable-source-maps` warn. src/ is not shipped, so a map must carry its sources.
    const broken: string[] = [];
    for (const file of code.filter((f) => !isDeclaration(f))) {
      const named = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(join(packageRoot, file), 'utf8'));
      if (named === null) continue;
      const map = posix.join(posix.dirname(file), named[1]!);
      if (!files.has(map)) {
        broken.push(`${file} -> ${named[1]} (not packed)`);
        continue;
      }
      const { sources, sourcesContent } = JSON.parse(readFileSync(join(packageRoot, map), 'utf8')) as {
        sources: string[];
        sourcesContent?: (string | null)[];
      };
      sources.forEach((source, i) => {
        const shipped = files.has(posix.join(posix.dirname(map), source));
        if (!shipped && typeof sourcesContent?.[i] !== 'string')
          broken.push(`${map} -> ${source} (no content)`);
      });
    }
    expect(broken).toEqual([]);
  });

  it('holds every file the README and its reference pages link or show by relative path', () => {
    // The registry and an installed package's README resolve such a path against the package:
    // an unshipped one is a broken image or link there.
    expect(readmePaths.length).toBeGreaterThan(0);
    expect(readmePaths.filter((t) => !files.has(t))).toEqual([]);
  });

  it('leaves out tests, benchmarks and what only this repository uses', () => {
    const stray = [...files].filter(
      (f) =>
        (f.endsWith('.map') && !files.has(f.slice(0, -'.map'.length))) ||
        /^(test|bench|\.ci|\.gpu|src|workers)\//.test(f) ||
        (f.startsWith('docs/') && !readmePaths.includes(f)) ||
        /^dist\/(test|bench|readme)\//.test(f),
    );
    expect(stray).toEqual([]);
    // The whole package today is about 2.1 MB unpacked, about half of it source maps (1.2 MB at
    // the first release; the code grew); a stray build or data file is far more.
    expect(packed.unpackedSize).toBeLessThan(3 * 1024 * 1024);
  });
});
