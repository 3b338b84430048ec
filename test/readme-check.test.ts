/**
 * scripts/check-readme.mjs (run by `npm run typecheck`) must fail on an example that no longer
 * matches the API, at the README line of the mistake; otherwise it passing proves nothing.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';

const dir = mkdtempSync(join(tmpdir(), 'omni-readme-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Uses what the README's blocks rely on: a package import, top-level await and `using`.
const good = [
  '```ts',
  "import { BoundedAdmission } from 'omni-runtime';",
  'const admission = new BoundedAdmission({ requests: 4 });',
  '{',
  '  using permit = await admission.admit(1);',
  '}',
  '```',
];
// `request` for `requests`: the kind of drift a renamed option leaves behind.
const bad = [
  '```ts',
  "import { BoundedAdmission } from 'omni-runtime';",
  'new BoundedAdmission({ request: 4 });',
  '```',
];

/** Writes `lines` as a markdown file and runs the check on it (and on `more` pages, if given). */
function check(
  name: string,
  lines: string[],
  more: Record<string, string[]> = {},
): { status: number | null; output: string } {
  const pages = Object.entries({ [name]: lines, ...more }).map(([page, text]) => {
    const file = join(dir, page);
    writeFileSync(file, `${text.join('\n')}\n`);
    return file;
  });
  const run = spawnSync(process.execPath, ['scripts/check-readme.mjs', ...pages], {
    cwd: packageRoot,
    encoding: 'utf8',
  });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('check-readme', () => {
  it('fails on a block using a misspelled option, naming the README line of the mistake', () => {
    // Lines 1-7 good block, 8 blank, 9 heading, 10 blank, 11 fence, 12 import, 13 the mistake.
    const { status, output } = check('bad.md', [...good, '', '## Drifted', '', ...bad]);
    expect(status).not.toBe(0);
    expect(output).toContain('bad.md:13:');
    expect(output).toContain("'request'");
    expect(output).toContain('block 2, fence at line 11, under "Drifted"');
    expect(output).not.toMatch(/bad\.md:[1-7]:/);
  });

  it('checks a block whose fence has words after its language, and the blocks after it', () => {
    const titled = ['```ts title="example.ts"', ...bad.slice(1)];
    const { status, output } = check('titled.md', [...titled, '', ...bad]);
    expect(status).not.toBe(0);
    expect(output).toContain('titled.md:3:');
    expect(output).toContain('titled.md:8:');
  });

  it('passes when every block typechecks; a block marked skip is not compiled', () => {
    const { status, output } = check('good.md', [...good, '', '<!-- readme-check: skip -->', ...bad]);
    expect(output).toContain('1 ```ts block(s)');
    expect(status).toBe(0);
  });

  it('checks ```typescript blocks, one-line blocks and blocks indented in a list item', () => {
    const lines = [
      '## Forms',
      '',
      '1. A step:',
      '   ```ts',
      "   const a: number = 'one';",
      '   ```',
      '',
      '#2, a paragraph and not a heading:',
      '',
      '```typescript',
      "const b: number = 'two';",
      '```',
    ];
    const { status, output } = check('forms.md', lines);
    expect(status).not.toBe(0);
    expect(output).toContain('forms.md:5:');
    expect(output).toContain('forms.md:11:');
    expect(output).toContain('block 2, fence at line 10, under "Forms"');
  });

  it('takes a fence line with a language inside another block as its text, not as its end', () => {
    // A markdown example showing a fence; ending the outer block there would shift every fence
    // after it, and the ```ts block below would go unchecked.
    const { status, output } = check('nested.md', ['```md', '```ts', '```', '', ...bad]);
    expect(status).not.toBe(0);
    expect(output).toContain('nested.md:7:');
  });

  it('skips a block whose marker stands a blank line above it; nothing left to check passes', () => {
    const { status, output } = check('skipped.md', ['<!-- readme-check: skip -->', '', ...bad]);
    expect(output).toContain('no ```ts blocks to check');
    expect(status).toBe(0);
  });

  it('fails on a ```ts block that is never closed (it would otherwise go unchecked)', () => {
    const { status, output } = check('unclosed.md', [...good, '', ...bad.slice(0, -1)]);
    expect(status).not.toBe(0);
    expect(output).toContain('line 9');
  });

  it('checks several pages in one run, each mistake at its own page and line', () => {
    const { status, output } = check('first.md', good, { 'second.md': ['# Second', '', ...bad] });
    expect(status).not.toBe(0);
    expect(output).toContain('second.md:5:');
    expect(output).toContain('block 1, fence at line 3, under "Second"');
    expect(output).not.toContain('first.md:');
  });

  it('with no argument, checks the README and every reference page under docs/', () => {
    const run = spawnSync(process.execPath, ['scripts/check-readme.mjs'], {
      cwd: packageRoot,
      encoding: 'utf8',
    });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('README.md');
    expect(run.stdout).toContain('docs/runtime.md');
  });
});
