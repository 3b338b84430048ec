/**
 * What workers/ may import from src/ (README, Development): what runs in the worker thread
 * itself, never the main-thread side. A worker that loaded the runtime, the pool, the HTTP front
 * or the command line would start, in every thread, what only the main thread should. Read from
 * the sources, following relative imports transitively.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';

const MAIN_THREAD_ONLY = [/^src\/runtime\.ts$/, /^src\/runtime\/pool\.ts$/, /^src\/serve\//, /^src\/cli/];

/** Every source file the worker entries reach through relative imports, relative to the root. */
function reached(): string[] {
  const queue = readdirSync(join(packageRoot, 'workers'))
    .filter((name) => /\.c?ts$/.test(name))
    .map((name) => `workers/${name}`);
  const seen = new Set<string>();
  while (queue.length !== 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = readFileSync(join(packageRoot, file), 'utf8');
    for (const [, spec] of source.matchAll(/(?:from|import|require)\s*\(?\s*'(\.[^']+)'/g)) {
      const target = normalize(join(dirname(file), spec ?? '')).replace(/\.(c?)js$/, '.$1ts');
      if (existsSync(join(packageRoot, target))) queue.push(relative('.', target));
    }
  }
  return [...seen].sort();
}

describe('worker imports', () => {
  it('reach the admission, errors and native bindings, never the main-thread side', () => {
    const files = reached();
    // The walk must find what the workers really use, or an empty list passes the check below.
    expect(files).toEqual(
      expect.arrayContaining(['src/admission/layout.ts', 'src/wire-error.ts', 'src/native/context.ts']),
    );
    expect(files.filter((file) => MAIN_THREAD_ONLY.some((pattern) => pattern.test(file)))).toEqual([]);
  });
});
