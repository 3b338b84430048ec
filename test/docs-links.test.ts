/**
 * The README and the reference pages under docs/ link one another by relative path and anchor:
 * each one must land, or a reader who follows it from the README (on GitHub, or in the package
 * the registry shows) finds nothing there.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { headingAnchors, linkedPages, markdownLinks } from './fixtures/markdown-links.js';

const pages = linkedPages();

describe('the README and docs/ pages', () => {
  it('reach every page under docs/ from the README', () => {
    const written = readdirSync(join(packageRoot, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`);
    // The reader must find the pages, or an empty list passes.
    expect(written.length).toBeGreaterThan(5);
    expect(written.filter((page) => !pages.includes(page))).toEqual([]);
  });

  it.each(pages)('%s: every relative link names a file that exists', (page) => {
    const links = markdownLinks(page).filter((l) => l.path !== undefined);
    const missing = links.filter((l) => !existsSync(join(packageRoot, l.path!)));
    expect(missing.map((l) => l.target)).toEqual([]);
  });

  it.each(pages)('%s: every anchor names a heading of its page', (page) => {
    const links = markdownLinks(page).filter((l) => l.path?.endsWith('.md') && l.anchor !== undefined);
    const broken = links.filter((l) => !headingAnchors(l.path!).has(l.anchor!));
    expect(broken.map((l) => l.target)).toEqual([]);
  });
});

describe('headingAnchors', () => {
  it("drops what GitHub drops from a heading's anchor: backticks, colons, parentheses", () => {
    // A page of this package's whose headings carry each: its own anchors must come out so.
    const readme = headingAnchors('README.md');
    expect(readme).toContain('the-main-job-npm-start-omni-runtime-bench');
    expect(readme).toContain('admission-npm-run-benchadmission');
  });
});
