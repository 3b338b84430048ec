/**
 * vega and vega-lite are optional: installed without them, `omni-runtime bench` skips its charts
 * and still succeeds; any other failure to load them still fails the command. In-process, with
 * the package loader replaced and the errors Node really throws for a package that is not there.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runBenchCommand } from '../src/cli/bench-command.js';
import type { BenchSummary } from '../src/cli/bench-report.js';
import {
  CHART_INSTALL_COMMAND,
  CHART_PACKAGES,
  type ImportPackage,
  loadChartLibraries,
} from '../src/cli/chart-libraries.js';
import { CHART_FILES } from '../src/cli/charts.js';
import { packageRoot } from '../src/paths.js';
import { benchResult } from './fixtures/bench-result.js';
import { captureOutputPerTest } from './fixtures/capture-output.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-charts-');

/** The error Node's own import() gives for `name` where no such package is installed. */
function notInstalledError(name: string): Error {
  const script = `import(${JSON.stringify(name)}).catch((e) => process.stdout.write(JSON.stringify({ code: e.code, message: e.message })))`;
  // Run from an empty folder, so that the package resolves nowhere.
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: tempDir() });
  const { code, message } = JSON.parse(out.toString()) as { code: string; message: string };
  return Object.assign(new Error(message), { code });
}

let vegaMissing: Error;
let vegaLiteMissing: Error;
let dependencyMissing: Error;
beforeAll(() => {
  vegaMissing = notInstalledError('vega');
  vegaLiteMissing = notInstalledError('vega-lite');
  dependencyMissing = notInstalledError('vega-dataflow'); // one of vega's own dependencies
});

type PackageJson = Partial<Record<string, Record<string, unknown>>>;

const fakeLibraries = { vega: { marker: 'vega' }, vegaLite: { marker: 'vega-lite' } };
/** A loader that finds the fake libraries, except where `failures` says what to throw. */
function loader(failures: { vega?: unknown; 'vega-lite'?: unknown } = {}): ImportPackage {
  return async (name) => {
    if (failures[name] !== undefined) throw failures[name];
    return name === 'vega' ? fakeLibraries.vega : fakeLibraries.vegaLite;
  };
}

describe('loadChartLibraries', () => {
  it('names the exact versions package.json pins for development; a consumer does not get them unasked', () => {
    const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as PackageJson;
    for (const [name, version] of Object.entries(CHART_PACKAGES)) {
      expect(pkg.devDependencies?.[name], name).toBe(version);
      // A range: a consumer's own vega 6 of a later minor must not make npm refuse the install.
      expect(pkg.peerDependencies?.[name], name).toBe(`^${version}`);
      expect(pkg.peerDependenciesMeta?.[name], name).toEqual({ optional: true });
      expect(pkg.dependencies?.[name], name).toBeUndefined();
      // Not optionalDependencies: npm silently skips an optional package whose engines do not
      // match, and vega-lite 6.5 declares Node >= 22, so Node 20 would never get the charts.
      expect(pkg.optionalDependencies?.[name], name).toBeUndefined();
      expect(CHART_INSTALL_COMMAND).toContain(`${name}@${version}`);
    }
  });

  it('loads the installed packages by default', async () => {
    const libraries = await loadChartLibraries();
    expect(libraries?.vega.View).toBeTypeOf('function');
    expect(libraries?.vegaLite.compile).toBeTypeOf('function');
  });

  it('gives both libraries when both load', async () => {
    expect(await loadChartLibraries(loader())).toEqual(fakeLibraries);
  });

  it('gives undefined when vega, vega-lite or both are not installed', async () => {
    expect(vegaMissing).toHaveProperty('code', 'ERR_MODULE_NOT_FOUND');
    expect(await loadChartLibraries(loader({ vega: vegaMissing }))).toBeUndefined();
    expect(await loadChartLibraries(loader({ 'vega-lite': vegaLiteMissing }))).toBeUndefined();
    expect(
      await loadChartLibraries(loader({ vega: vegaMissing, 'vega-lite': vegaLiteMissing })),
    ).toBeUndefined();
  });

  it('rejects when an installed package misses a module of its own', async () => {
    expect(dependencyMissing).toHaveProperty('code', 'ERR_MODULE_NOT_FOUND');
    await expect(loadChartLibraries(loader({ vega: dependencyMissing }))).rejects.toBe(dependencyMissing);
    // vega-lite's error names vega-lite, not vega: only the package that was asked for counts.
    await expect(loadChartLibraries(loader({ vega: vegaLiteMissing }))).rejects.toBe(vegaLiteMissing);
  });

  it('rejects on any other failure to load', async () => {
    const denied = Object.assign(new Error('permission denied'), { code: 'EACCES' });
    await expect(loadChartLibraries(loader({ 'vega-lite': denied }))).rejects.toBe(denied);
    const broken = new SyntaxError('Unexpected token');
    await expect(loadChartLibraries(loader({ vega: broken }))).rejects.toBe(broken);
    await expect(loadChartLibraries(loader({ vega: 'a thrown string' }))).rejects.toBe('a thrown string');
  });
});

describe('omni-runtime bench without the chart packages', () => {
  const result = benchResult([]);
  const output = captureOutputPerTest();

  const bench = (out: string, importPackage: ImportPackage, json = true) =>
    runBenchCommand([...(json ? ['--json'] : []), '--out', out], {
      runBench: async () => result,
      importPackage,
    });

  it('writes results.json, skips the charts with one line saying how to add them, and exits 0', async () => {
    const out = tempDir();
    expect(await bench(out, loader({ vega: vegaMissing, 'vega-lite': vegaLiteMissing }))).toBe(0);
    expect(readdirSync(out)).toEqual(['results.json']);
    expect(JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'))).toEqual(result);
    expect((JSON.parse(output.stdout) as BenchSummary).files).toEqual([join(out, 'results.json')]);
    const lines = output.stderr.split('\n').filter((line) => line !== '');
    expect(lines).toHaveLength(1);
    for (const fact of ['skipped', 'vega', 'vega-lite', 'optional', CHART_INSTALL_COMMAND]) {
      expect(lines[0]).toContain(fact);
    }
  });

  it('the table names only the file written', async () => {
    const out = tempDir();
    expect(await bench(out, loader({ 'vega-lite': vegaLiteMissing }), false)).toBe(0);
    expect(output.stdout).toContain(`written: ${join(out, 'results.json')}\n`);
    expect(output.stdout).not.toContain('.svg');
    expect(existsSync(join(out, 'latency.svg'))).toBe(false);
  });

  it("removes an earlier run's charts from --out rather than leave them beside new results", async () => {
    const out = tempDir();
    // An earlier run's output: its results.json too (bench replaces only its own files).
    writeFileSync(join(out, 'results.json'), `${JSON.stringify(result, null, 2)}\n`);
    for (const file of CHART_FILES) writeFileSync(join(out, file), '<svg>an earlier run</svg>');
    expect(await bench(out, loader({ vega: vegaMissing, 'vega-lite': vegaLiteMissing }))).toBe(0);
    expect(readdirSync(out)).toEqual(['results.json']);
    for (const file of CHART_FILES) writeFileSync(join(out, file), '<svg>an earlier run</svg>');
    await expect(bench(out, loader({ vega: dependencyMissing }))).rejects.toHaveProperty(
      'code',
      'ERR_MODULE_NOT_FOUND',
    );
    expect(readdirSync(out)).toEqual(['results.json']);
  });

  it('fails with the error itself when the packages are there but do not load', async () => {
    const out = tempDir();
    await expect(bench(out, loader({ vega: dependencyMissing }))).rejects.toHaveProperty(
      'code',
      'ERR_MODULE_NOT_FOUND',
    );
    expect(output.stderr).not.toContain('skipped');
    // The run's measurement is kept, and the summary says which files exist.
    expect(JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'))).toEqual(result);
    expect((JSON.parse(output.stdout) as BenchSummary).files).toEqual([join(out, 'results.json')]);
  });
});
