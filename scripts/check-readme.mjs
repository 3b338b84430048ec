#!/usr/bin/env node
// Typechecks every ```ts block of README.md and the reference pages under docs/ (or of the markdown
// files given as arguments) against the package's own sources, so an API change that leaves an
// example wrong fails `npm run typecheck`. Each block becomes its own module under dist/readme/
// (gitignored, wiped by every build), all of them one tsc run; a block preceded by
// `<!-- readme-check: skip -->` is left out. Diagnostics are reported at the page's lines.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const given = process.argv.slice(2);
const markdowns = given.length > 0 ? given.map((file) => resolve(file)) : packagePages();
const names = markdowns.map((markdown) => relative(process.cwd(), markdown) || markdown);
const shownAll = names.join(', ');

// One folder per set of pages: the test's temp files never overwrite the package's.
const hash = createHash('sha256').update(markdowns.join('\n')).digest('hex').slice(0, 8);
const scratch = join(root, 'dist', 'readme', `${basename(markdowns[0], '.md')}-${hash}`);
rmSync(scratch, { recursive: true, force: true });
mkdirSync(scratch, { recursive: true });

/** Each module's page and the heading its block sits under, for the diagnostics. */
const origins = new Map();
const files = markdowns.flatMap((markdown, page) => {
  const shown = names[page];
  return extractBlocks(readFileSync(markdown, 'utf8'), shown).map((block) => {
    const file = `page-${page + 1}-block-${block.index}-line-${block.fence}.ts`;
    writeFileSync(join(scratch, file), block.code);
    origins.set(file, { shown, heading: block.heading });
    return file;
  });
});
if (files.length === 0) {
  console.log(`check-readme: no \`\`\`ts blocks to check in ${shownAll}`);
  process.exit(0);
}

writeFileSync(
  join(scratch, 'tsconfig.json'),
  JSON.stringify(
    {
      extends: relative(scratch, join(root, 'tsconfig.json')),
      compilerOptions: {
        noEmit: true,
        // A reader's `from 'omni-runtime'` must mean src/, not a dist/ that may be stale or absent.
        paths: { 'omni-runtime': [relative(scratch, join(root, 'src', 'index.ts'))] },
        // Examples end on a value they show being produced (`const y = await lr.run(...)`);
        // using it is the reader's part, so an unread local is not a mistake in an example.
        noUnusedLocals: false,
      },
      // `files`, not `include`: the base config's outDir (dist) is excluded from include globs.
      files,
      include: [],
    },
    null,
    2,
  ),
);

const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const run = spawnSync(process.execPath, [tsc, '-p', join(scratch, 'tsconfig.json'), '--pretty', 'false'], {
  cwd: root,
  encoding: 'utf8',
});
if (run.error) throw run.error;

const output = `${run.stdout}${run.stderr}`.trim();
if (run.status === 0) {
  console.log(`check-readme: ${files.length} \`\`\`ts block(s) in ${shownAll} typecheck`);
  process.exit(0);
}
console.error(output.split('\n').map(toPageLine).join('\n'));
console.error(`check-readme: ${shownAll}: \`\`\`ts blocks that do not typecheck (tsc exit ${run.status})`);
process.exit(1);

/** README.md and the package's reference pages, docs/*.md. */
function packagePages() {
  const docs = join(root, 'docs');
  const pages = readdirSync(docs)
    .filter((file) => file.endsWith('.md'))
    .sort()
    .map((file) => join(docs, file));
  return [join(root, 'README.md'), ...pages];
}

/**
 * The ```ts blocks to check, numbered among all of them (skipped ones too, so "block 3" is the
 * third in the file), each with its 1-based fence line and the heading it sits under. Every fence
 * is tracked, so a `# comment` inside a ```sh block is not taken for a heading.
 */
function extractBlocks(text, shown) {
  const found = [];
  let open = null;
  let previous = '';
  let heading = '';
  let count = 0;
  for (const [i, line] of text.split(/\r?\n/).entries()) {
    // An opening fence may carry words after its language (```ts title="x.ts"); a closing one
    // carries nothing.
    const fence = /^\s*```\s*([^\s`]*)(.*)$/.exec(line);
    if (open) {
      if (fence && fence[1] === '' && fence[2].trim() === '') {
        if (open.ts && !open.skip) found.push({ ...open, code: `${open.code.join('\n')}\n` });
        open = null;
      } else open.code.push(line);
    } else if (fence) {
      const ts = fence[1] === 'ts' || fence[1] === 'typescript';
      const skip = /<!--\s*readme-check:\s*skip\s*-->/.test(previous);
      open = { index: ts ? ++count : 0, fence: i + 1, heading, code: [], ts, skip };
    } else if (/^#{1,6}\s/.test(line)) heading = line.replace(/^#+\s*/, '');
    if (line.trim() !== '') previous = line;
  }
  // An unclosed fence would silently drop its example from the check.
  if (open?.ts) {
    console.error(`check-readme: ${shown}: the \`\`\`ts block at line ${open.fence} is never closed`);
    process.exit(1);
  }
  return found;
}

/** Rewrites `.../page-1-block-2-line-80.ts(5,3): error ...` to the page's line: 80 is the fence, 80+5 the line. */
function toPageLine(line) {
  const match = /^(?:.*[\\/])?(page-\d+-block-(\d+)-line-(\d+)\.ts)\((\d+),(\d+)\): (.*)$/.exec(line);
  if (!match) return line;
  const [, file, index, fence, row, column, message] = match;
  const { shown, heading } = origins.get(file);
  const under = heading ? `, under "${heading}"` : '';
  return `${shown}:${Number(fence) + Number(row)}:${column}: ${message}\n  (\`\`\`ts block ${index}, fence at line ${fence}${under})`;
}
