/**
 * `omni-runtime bench --out` at a folder that holds files of the names bench writes
 * (results.json, latency.svg, throughput.svg, timeline.svg) that no earlier run wrote: an
 * operator's `.`, home folder or project. Refused as a usage mistake (exit 2, nothing run,
 * nothing on stdout), every file left as it was. Before, the run replaced that results.json and
 * replaced or, with the charts skipped, removed those SVGs. A folder where none of the names is
 * taken, whatever else it holds, and an earlier run's output, are still written (see
 * cli-bench.test.ts, cli-chart-libraries.test.ts).
 */
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { checkEarlierRun } from '../src/cli/earlier-run.js';
import { packageRoot } from '../src/paths.js';
import { runCli } from './fixtures/cli-process.js';
import { tempDirs } from './fixtures/temp-dirs.js';
import { thrownCode } from './fixtures/thrown.js';

const tempDir = tempDirs('omni-bench-out-foreign-');
const NAMES = ['results.json', 'latency.svg', 'throughput.svg', 'timeline.svg'];

it.each([
  ['results.json', '{"mine": true}\n'],
  ['latency.svg', '<svg>my own drawing</svg>\n'],
])(
  "refuses a folder holding an operator's %s: exit 2 (a usage mistake), every file untouched",
  async (name, text) => {
    const out = tempDir();
    writeFileSync(join(out, name), text);
    writeFileSync(join(out, 'notes.txt'), 'other work\n');
    const { code, stdout, stderr } = await runCli([
      'bench',
      '--duration',
      '0.1',
      '--calibrate',
      '0.1',
      '--out',
      out,
    ]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(stderr).toContain(name);
    expect(readdirSync(out).sort()).toEqual([name, 'notes.txt'].sort());
    expect(readFileSync(join(out, name), 'utf8')).toBe(text);
  },
);

it("takes an earlier run's output (its results.json says so, or charts vega drew), and a folder none of whose names is taken", () => {
  const earlier = tempDir();
  writeFileSync(join(earlier, 'results.json'), '{\n  "tool": "omni-runtime bench",\n  "seed": 1\n}\n');
  writeFileSync(join(earlier, 'latency.svg'), '<svg>an earlier run</svg>');
  expect(() => checkEarlierRun(earlier, earlier, 'results.json', NAMES)).not.toThrow();
  // The README's charts (docs/bench) were drawn by vega, with no results.json beside them.
  const charts = join(packageRoot, 'docs', 'bench');
  expect(() => checkEarlierRun(charts, charts, 'results.json', NAMES)).not.toThrow();
  const busy = tempDir();
  writeFileSync(join(busy, 'notes.txt'), 'other work\n');
  mkdirSync(join(busy, 'src'));
  expect(() => checkEarlierRun(busy, busy, 'results.json', NAMES)).not.toThrow();
});

it("refuses charts beside a results.json that is not a run's", () => {
  const out = tempDir();
  writeFileSync(join(out, 'results.json'), '{"tool": "something else"}');
  writeFileSync(join(out, 'timeline.svg'), '<svg/>');
  expect(thrownCode(() => checkEarlierRun(out, 'here', 'results.json', NAMES))).toBe('OMNI_ERR_USAGE');
});

// Only a run's own results.json begins with its tool: an operator's file that holds runs (a
// collection of them, a copy under a key of its own) is theirs, not a run's to replace.
it("refuses a results.json that holds a run's results but is not one", () => {
  const out = tempDir();
  writeFileSync(join(out, 'results.json'), '{"runs": [{"tool": "omni-runtime bench", "seed": 1}]}\n');
  expect(thrownCode(() => checkEarlierRun(out, 'here', 'results.json', NAMES))).toBe('OMNI_ERR_USAGE');
});

// As prepareOutDir sees it: a name that is a link to nothing is written through (its target
// made), as a name not there is, so it is no one's file to refuse.
it('takes a folder where a name is a link to nothing', () => {
  const out = tempDir();
  symlinkSync(join(out, 'nowhere.json'), join(out, 'results.json'));
  symlinkSync(join(out, 'nowhere.svg'), join(out, 'latency.svg'));
  expect(() => checkEarlierRun(out, out, 'results.json', NAMES)).not.toThrow();
});
