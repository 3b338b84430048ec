/**
 * The shipped .d.ts as a consumer's compiler meets them: a project outside this repository with
 * `omni-runtime` in its node_modules (a link to this package, resolved through package.json
 * `exports` to the built dist/), type-checked by tsc under strict settings a user may choose.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { writeConsumerTsconfig } from './fixtures/consumer-tsconfig.js';
import { linkedPages } from './fixtures/markdown-links.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const dir = tempDirs('omni-package-types-')();
mkdirSync(join(dir, 'node_modules'));
symlinkSync(packageRoot, join(dir, 'node_modules', 'omni-runtime'), 'dir');
symlinkSync(join(packageRoot, 'node_modules', '@types'), join(dir, 'node_modules', '@types'), 'dir');
writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module' }));

/**
 * Writes `code` as the consumer's only module (or each of several modules, by file name) and
 * type-checks it with these compiler options.
 */
function typecheck(
  name: string,
  code: string | Record<string, string>,
  options: Record<string, unknown>,
): { status: number | null; output: string } {
  const project = join(dir, name);
  mkdirSync(project);
  const modules = typeof code === 'string' ? { 'main.ts': code } : code;
  for (const [file, text] of Object.entries(modules)) writeFileSync(join(project, file), text);
  writeConsumerTsconfig(project, Object.keys(modules), options);

  const tsc = join(packageRoot, 'node_modules', 'typescript', 'bin', 'tsc');
  const run = spawnSync(process.execPath, [tsc, '-p', project, '--pretty', 'false'], {
    cwd: dir,
    encoding: 'utf8',
  });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

// Every documented option, given as a variable that may be undefined: what a wrapper that
// forwards its own optional settings writes. The runtime treats undefined as absent.
const forwarded = `
import {
  BoundedAdmission, defineWorker, LinearRuntime, loadNativeLibrary, NativeContext, Runtime, selectBackend,
} from 'omni-runtime';
import { serve } from 'omni-runtime/serve';

declare const n: number | undefined;
declare const flag: boolean | undefined;
declare const signal: AbortSignal | undefined;
declare const host: string | undefined;

export default defineWorker(async (x: number) => x, { init: undefined, close: undefined });

const rt = await Runtime.start({
  worker: new URL('./worker.js', import.meta.url),
  threads: n, admission: { requests: 4, units: n, wait: flag }, deadlineMs: n,
  idleTimeout: n, resourceLimits: undefined, startTimeoutMs: n,
});
await rt.run(1, { cost: n, signal, deadlineMs: n, transfer: undefined });
await rt.close({ timeoutMs: n });
const lr = await LinearRuntime.start({
  backend: undefined, device: n, libraries: undefined, weights: undefined, inFeatures: n,
  outFeatures: n, seed: n, workspaceCount: n, workspaceBytes: n, threads: n, admission: undefined,
});
await lr.run(new Float32Array(256), { rows: n, cost: n, signal, deadlineMs: n });
const server = await serve(lr, {
  host, port: n, bodyLimit: n, deadlineMs: n, retryAfterSeconds: n, drainTimeoutMs: n, closeRuntime: flag,
});
await server.drain({ timeoutMs: n });
await new BoundedAdmission({ requests: 1, units: n }).admit(1, { signal, timeoutMs: n });
declare const path: string | undefined;
selectBackend('fixture', process.env, { device: n, fixturePath: path, cudaPath: path });
NativeContext.open(loadNativeLibrary('fixture', { path }), {
  device: n, workspaceCount: n, workspaceBytes: n, env: undefined,
}).close();
`;

// The two resolutions a consumer's tsconfig may name: Node's own, and a bundler's.
const node16 = { module: 'Node16', moduleResolution: 'Node16' };
const bundler = { module: 'ESNext', moduleResolution: 'Bundler' };
const strictest = { exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, skipLibCheck: true };

// Every type a call takes or returns, imported by name from the two entry points and written
// where a consumer writes it: an options object declared before the call, a result stored in a
// variable of its type, a worker module's parts typed one by one.
const named = `
import {
  type AdmissionBounds, type AdmissionReport, type AdmitOptions, type BackendChoice, type BackendName,
  type BackendPreference, BoundedAdmission, type Claim, type CloseOptions, type CloseResult, defineWorker,
  fromWire, type LatencySummary, type LinearRunOptions, LinearRuntime, type LinearRuntimeOptions,
  type LinearWeights, type LoadOptions, loadNativeLibrary, NativeContext, type NativeLibrary,
  type NativeLibraryPaths, type NativeOpenOptions, type NativeStats, type Permit, type RawFixtureApi,
  type RawHandle, type RawNativeApi, type RawOpenOptions, type Refusal, type RunOptions, Runtime,
  type RuntimeAdmissionOptions, type RuntimeOptions, type RuntimeReport, type RuntimeState, type SelectOptions,
  seededWeights, selectBackend, type TaskContext, type ThreadEnds, toWire, type WireError, type WireFields,
  type WorkerDefinition, type WorkerHandler, type WorkerOptions,
} from 'omni-runtime';
import {
  answerFor, type DrainOptions, type DrainResult, type ErrorBody, type HealthBody, type HttpAnswer,
  type MetricsSource, serve, type Served, type ServeHandle, ServeMetrics, type ServeOptions, type ServerState,
} from 'omni-runtime/serve';

const workerOptions: WorkerOptions = { init: (data: unknown) => void data };
const handler: WorkerHandler<{ n: number }, number> = (input, ctx: TaskContext) => input.n * ctx.cost;
export const definition: WorkerDefinition<{ n: number }, number> = defineWorker(handler, workerOptions);

const bounds: AdmissionBounds = { requests: 2, units: 8 };
const admission = new BoundedAdmission(bounds);
const tried: Permit | Refusal = admission.tryAdmit(1);
const admitOptions: AdmitOptions = { timeoutMs: 10 };
const permit: Permit = await admission.admit(1, admitOptions);
const claim: Claim = permit.toClaim();
admission.releaseClaim(claim);
const admissionReport: AdmissionReport = admission.report();

const admissionOptions: RuntimeAdmissionOptions = { requests: 4, wait: true };
const threadEnds: ThreadEnds = { exited: (threadId: number) => void threadId, stopped: () => {} };
const runtimeOptions: RuntimeOptions = {
  worker: new URL('./worker.js', import.meta.url),
  admission: admissionOptions,
  threadEnds,
};
const rt: Runtime = await Runtime.start(runtimeOptions);
const runOptions: RunOptions = { cost: 1 };
const doubled: number = await rt.run<number>({ n: 1 }, runOptions);
const report: RuntimeReport = rt.report();
const latency: LatencySummary = report.waitTimeMs;
const state: RuntimeState = rt.state;
const closeOptions: CloseOptions = { timeoutMs: 1 };
const closed: CloseResult = await rt.close(closeOptions);

const weights: LinearWeights = seededWeights(4, 2);
const libraries: NativeLibraryPaths = {};
const preference: BackendPreference = 'auto';
const linearOptions: LinearRuntimeOptions = { backend: preference, weights, libraries };
const lr: LinearRuntime = await LinearRuntime.start(linearOptions);
const linearRun: LinearRunOptions = { rows: 1 };
const y: Float32Array = await lr.run(new Float32Array(4), linearRun);
const stats: NativeStats = await lr.stats();
const backend: BackendName = lr.backend;

const selectOptions: SelectOptions = {};
const choice: BackendChoice = selectBackend('fixture', process.env, selectOptions);
const loadOptions: LoadOptions = {};
const library: NativeLibrary = loadNativeLibrary('fixture', loadOptions);
const raw: RawNativeApi = library.raw;
const fixture: RawFixtureApi | null = library.fixture;
const rawOptions: RawOpenOptions = { workspace_count: 1, reserved: 0, workspace_bytes: 1024 };
const opened: [RawHandle | null] = [null];
raw.omni_open(0, rawOptions, opened);
const openOptions: NativeOpenOptions = { device: 0 };
const context: NativeContext = NativeContext.open(library, openOptions);

const wire: WireError = toWire(new Error('x'));
const fields: WireFields | undefined = wire.fields;
const rebuilt: Error = fromWire(wire);

const served: Served = lr;
const serveOptions: ServeOptions = { port: 0 };
const server: ServeHandle = await serve(served, serveOptions);
const drainOptions: DrainOptions = { timeoutMs: 1 };
const drained: DrainResult = await server.drain(drainOptions);
const serverState: ServerState = server.state;
const source: MetricsSource = { report: () => report, inflight: () => 0 };
const metrics: ServeMetrics = new ServeMetrics(source);
const answer: HttpAnswer = answerFor(rebuilt);
const body: ErrorBody = answer.body;
declare const health: HealthBody;

export const used = [tried, doubled, admissionReport, latency, state, closed, y, stats, backend, choice, fixture,
  context, drained, serverState, metrics, body, health, fields];
`;

// What a consumer's own declaration emit must name: each value exported with an inferred type
// from a call of ours. A type the entry points do not export fails it (TS2883, "cannot be
// named without a reference to ... This is likely not portable"). Left out: server.app and
// metrics.registry, fastify's and prom-client's own types, which a consumer names from those
// packages.
const inferred = `
import {
  BoundedAdmission, defineWorker, fromWire, LinearRuntime, loadNativeLibrary, NativeContext, NativeStatus,
  Runtime, seededWeights, selectBackend, toWire,
} from 'omni-runtime';
import { answerFor, serve, ServeMetrics } from 'omni-runtime/serve';

export const admission = new BoundedAdmission({ requests: 1 });
export const tried = admission.tryAdmit(1);
export const permit = await admission.admit(1, { timeoutMs: 1 });
export const claim = permit.toClaim();
export const admissionReport = admission.report();
export default defineWorker(async (x: number, ctx) => x * ctx.cost, { init: () => {} });
export const rt = await Runtime.start({ worker: 'worker.js', admission: { requests: 1 } });
export const ran = rt.run<number>(1, { cost: 1 });
export const report = rt.report();
export const closing = rt.close({ timeoutMs: 1 });
export const lr = await LinearRuntime.start({ weights: seededWeights(4, 2) });
export const linear = lr.run(new Float32Array(4), { rows: 1 });
export const stats = lr.stats();
export const lrRuntime = lr.runtime;
export const library = loadNativeLibrary('fixture', {});
export const raw = library.raw;
export const fixture = library.fixture;
export const choice = selectBackend('auto');
export const context = NativeContext.open(library, {});
export const status = NativeStatus;
export const wire = toWire(new Error('x'));
export const rebuilt = fromWire(wire);
export const server = await serve(lr, {});
export const drain = server.drain;
export const drained = await server.drain({ timeoutMs: 1 });
export const metrics = new ServeMetrics({ report: () => report, inflight: () => 0 });
export const scraped = await metrics.scrape();
export const answer = answerFor(rebuilt);
`;

// A consumer's error handling: narrowing by class and by code, against the union of codes,
// which must be exactly the codes of the exported error classes (OmniError aside: its code is a
// worker's own too). A class whose code is not in the union, or only a string, or a code of
// the union without a class, fails the `complete` line.
const codes = `
import * as omni from 'omni-runtime';
import {
  hasCode, OmniError, type OmniErrorCode, type RefusalReason, RejectedError, TooLargeError,
} from 'omni-runtime';
import { BodyTooLargeError } from 'omni-runtime/serve';

type Exports = typeof omni;
type Named = Exclude<keyof Exports, 'OmniError'>;
type ClassCode<K extends Named> = Exports[K] extends abstract new (...args: any[]) => infer E
  ? E extends Error & { readonly code: infer C } ? C : never
  : never;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const complete: Same<{ [K in Named]: ClassCode<K> }[Named], OmniErrorCode> = true;

declare const caught: unknown;
if (caught instanceof RejectedError) caught.code satisfies 'OMNI_ERR_REJECTED';
if (caught instanceof OmniError) caught.code satisfies string;
if (hasCode(caught, 'OMNI_ERR_DEADLINE')) caught.code satisfies 'OMNI_ERR_DEADLINE';

declare const refused: RejectedError | TooLargeError | BodyTooLargeError;
if (refused.code === 'OMNI_ERR_REJECTED') refused.reason satisfies RefusalReason;
else if (refused.code === 'OMNI_ERR_TOO_LARGE') refused.unitCapacity satisfies number;
else refused.limit satisfies number;

export const statuses = { OMNI_ERR_REJECTED: 503 } satisfies Partial<Record<OmniErrorCode, number>>;
// @ts-expect-error not a code of this package
export const typo: OmniErrorCode = 'OMNI_ERR_REJECT';
`;

/**
 * The ```ts blocks of the README and the pages it links, each as a module of its own.
 * scripts/check-readme.mjs checks them against src/ under this package's own settings; here they
 * meet the shipped .d.ts under a consumer's, the ones the install notes say the examples pass.
 */
function readmeBlocks(): Record<string, string> {
  const blocks = linkedPages().flatMap((page) => {
    const text = readFileSync(join(packageRoot, page), 'utf8');
    return (
      [...text.matchAll(/^```ts[^\n]*\n([\s\S]*?)^```[ \t]*$/gm)]
        // What check-readme leaves out, this leaves out too.
        .filter((block) => !/<!--\s*readme-check:\s*skip\s*-->\s*$/.test(text.slice(0, block.index)))
        .map(([, code]) => code ?? '')
    );
  });
  return Object.fromEntries(blocks.map((code, i) => [`block-${i + 1}.ts`, code]));
}

describe('the published types, from a consumer project', () => {
  it('accept every documented option given as undefined under exactOptionalPropertyTypes', () => {
    const { status, output } = typecheck('forwarded', forwarded, {
      exactOptionalPropertyTypes: true,
      skipLibCheck: true,
    });
    expect(output).toBe('');
    expect(status).toBe(0);
  });

  it('check with skipLibCheck off, under exactOptionalPropertyTypes and under module node16', () => {
    // What these settings check in the .d.ts files the two entry points reach, dependencies'
    // included: none of them may fail the consumer's build.
    const code = `
import { LinearRuntime, Runtime } from 'omni-runtime';
import { serve } from 'omni-runtime/serve';
export type Used = [Runtime, LinearRuntime, typeof serve];
`;
    const exact = typecheck('lib-exact', code, { exactOptionalPropertyTypes: true, skipLibCheck: false });
    expect(exact.output).toBe('');
    const node16 = typecheck('lib-node16', code, {
      module: 'Node16',
      moduleResolution: 'Node16',
      skipLibCheck: false,
    });
    expect(node16.output).toBe('');
    expect([exact.status, node16.status]).toEqual([0, 0]);
  });

  it('let a CommonJS module (.cts) import both entry points under module nodenext', () => {
    // README offers the package to CommonJS code through require(esm); TypeScript follows it
    // under nodenext (not node16, which models a Node without it), through the `exports`
    // conditions a require() matches.
    const code = `
import { BoundedAdmission, Runtime } from 'omni-runtime';
import { serve, type ServeHandle } from 'omni-runtime/serve';
export const admission = new BoundedAdmission({ requests: 2 });
export type Used = [Runtime, ServeHandle, typeof serve];
`;
    const { status, output } = typecheck('cjs-nodenext', { 'main.cts': code }, { skipLibCheck: false });
    expect(output).toBe('');
    expect(status).toBe(0);
  });

  it('check with skipLibCheck off under a target before ES2022, whose lib has no ErrorOptions', () => {
    // Node 20 runs ES2022, but a consumer's target (and so its default lib) may be older.
    const code = `
import { AbortError, OmniError } from 'omni-runtime';
export const errors = [new OmniError('MY_CODE', 'mine', { cause: 1 }), new AbortError('gone', { cause: 2 })];
`;
    const { status, output } = typecheck('lib-es2020', code, { target: 'ES2020', skipLibCheck: false });
    expect(output).toBe('');
    expect(status).toBe(0);
  });

  it('reject what the runtime would refuse', () => {
    // Each @ts-expect-error must meet an error, or tsc reports the directive unused.
    const code = `
import { BoundedAdmission, LinearRuntime, Runtime } from 'omni-runtime';
const admission = new BoundedAdmission({ requests: 2 });
// @ts-expect-error a cost is a number
admission.tryAdmit('1');
const permit = admission.tryAdmit(1);
// @ts-expect-error reason exists on a refusal only, until ok is checked
permit.reason;
if (!permit.ok) permit.reason satisfies 'requests' | 'units' | 'too-large' | 'queued' | 'closed';
// @ts-expect-error worker is required
await Runtime.start({ threads: 1 });
// @ts-expect-error no such backend
await LinearRuntime.start({ backend: 'gpu' });
const lr = await LinearRuntime.start();
// @ts-expect-error x is a Float32Array
await lr.run([1, 2, 3]);
`;
    const { status, output } = typecheck('invalid', code, { skipLibCheck: true });
    expect(output).toBe('');
    expect(status).toBe(0);
  });

  // serve() checks for run, report, close, inFeatures and outFeatures and reads nothing else;
  // the type once also asked for a LinearRuntime's `backend`, which a wrapper had to make up.
  it("take a Served of one's own that holds only what serve() checks for", () => {
    const code = `
import { Runtime } from 'omni-runtime';
import { serve, type Served } from 'omni-runtime/serve';

declare const rt: Runtime;
const own: Served = {
  run: (x, options) => rt.run(x, options),
  report: () => rt.report(),
  close: (options) => rt.close(options),
  inFeatures: 4,
  outFeatures: 2,
};
export const server = await serve(own, { port: 0 });
// @ts-expect-error outFeatures is one of them
export const short: Served = { run: own.run, report: own.report, close: own.close, inFeatures: 4 };
`;
    const { status, output } = typecheck('own-served', code, { ...strictest, ...node16 });
    expect(output).toBe('');
    expect(status).toBe(0);
  });

  it('let the buffer of a float array the package made be moved, where typed arrays are generic', () => {
    // TypeScript 5.7+ types a plain Float32Array's buffer as ArrayBufferLike, which
    // ctx.transfer and run's transfer (ArrayBuffers alone, as at run time) do not take.
    const code = `
import { defineWorker, LinearRuntime, type NativeContext } from 'omni-runtime';

declare const context: NativeContext;
export default defineWorker(async (x: Float32Array, ctx) => {
  const y = context.linearGelu(x, 1);
  ctx.transfer(y.buffer);
  return y;
});

const lr = await LinearRuntime.start();
const y = await lr.run(new Float32Array(256));
await lr.run(y, { transfer: [y.buffer] });

// An output array given is the one returned, as it was given.
declare const shared: Float32Array<SharedArrayBuffer>;
context.linearGelu(new Float32Array(256), 1, shared) satisfies Float32Array<SharedArrayBuffer>;
declare const maybe: Float32Array | undefined;
context.linearGelu(new Float32Array(256), 1, maybe) satisfies Float32Array;
// One that may be absent: the array returned may be a new one, over an ArrayBuffer of its own.
declare const maybeShared: Float32Array<SharedArrayBuffer> | undefined;
// @ts-expect-error -- not necessarily the shared array given
context.linearGelu(new Float32Array(256), 1, maybeShared) satisfies Float32Array<SharedArrayBuffer>;
context.linearGelu(new Float32Array(256), 1, undefined).buffer satisfies ArrayBuffer;
`;
    const { status, output } = typecheck('moved-floats', code, { ...strictest, ...node16 });
    expect(output).toBe('');
    expect(status).toBe(0);
  });

  it('name every type a call takes or returns, under module node16 and under bundler', () => {
    const results = [
      typecheck('named-node16', named, { ...strictest, ...node16 }),
      typecheck('named-bundler', named, { ...strictest, ...bundler }),
    ];
    expect(results.map((r) => r.output)).toEqual(['', '']);
    expect(results.map((r) => r.status)).toEqual([0, 0]);
  });

  it("let a consumer's declaration emit name every type it infers from a call", () => {
    const emit = { noEmit: false, declaration: true, emitDeclarationOnly: true, outDir: 'out' };
    const results = [
      typecheck('inferred-node16', inferred, { ...strictest, ...node16, ...emit }),
      typecheck('inferred-bundler', inferred, { ...strictest, ...bundler, ...emit }),
    ];
    expect(results.map((r) => r.output)).toEqual(['', '']);
    expect(results.map((r) => r.status)).toEqual([0, 0]);
  });

  it('narrow an error by class and by code, against an OmniErrorCode union complete for its classes', () => {
    const { status, output } = typecheck('codes', codes, { ...strictest, ...node16 });
    expect(output).toBe('');
    expect(status).toBe(0);
  });

  it("typecheck the README's and docs/' examples under strict and exactOptionalPropertyTypes, from the package", () => {
    const blocks = readmeBlocks();
    // The reader of the pages must find their blocks, or an empty project passes this test.
    expect(Object.keys(blocks).length).toBeGreaterThan(8);
    // skipLibCheck off, which the install notes name too, is the test above's: it reaches every .d.ts.
    const results = [
      typecheck('readme-node16', blocks, { ...strictest, ...node16 }),
      typecheck('readme-bundler', blocks, { ...strictest, ...bundler }),
    ];
    expect(results.map((r) => r.output)).toEqual(['', '']);
    expect(results.map((r) => r.status)).toEqual([0, 0]);
  });
});

/**
 * Where TypeScript's `node10` resolution (TypeScript 5's default for `module: commonjs`, removed
 * in 7, so not run here) looks for the types of `omni-runtime/<subpath>`: it ignores `exports`,
 * maps the subpath through `typesVersions` when that has a `*` entry, else tries the files a
 * CommonJS require would find at the package root. (The same lookup, made by TypeScript 5.9
 * itself, found the types of omni-runtime/serve with typesVersions, and none without.)
 */
function node10Types(pkg: Record<string, unknown>, subpath: string): string | undefined {
  const versions = pkg.typesVersions as Record<string, Record<string, string[]>> | undefined;
  const paths = versions?.['*'];
  if (paths !== undefined) {
    for (const [pattern, targets] of Object.entries(paths)) {
      const star = pattern.indexOf('*');
      const matched =
        star === -1
          ? pattern === subpath
            ? ''
            : undefined
          : subpath.startsWith(pattern.slice(0, star)) && subpath.endsWith(pattern.slice(star + 1))
            ? subpath.slice(star, subpath.length - (pattern.length - star - 1))
            : undefined;
      if (matched === undefined) continue;
      const found = targets
        .map((target) => join(packageRoot, target.replace('*', matched)))
        .find((file) => existsSync(file));
      if (found !== undefined) return found;
    }
  }
  return [`${subpath}.d.ts`, join(subpath, 'index.d.ts')]
    .map((file) => join(packageRoot, file))
    .find((file) => existsSync(file));
}

describe('the published types, under resolution node10', () => {
  it('are found for every subpath of `exports`, the same file `exports` names', () => {
    const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    const exported = pkg.exports as Record<string, string | { types?: string }>;
    const subpaths = Object.entries(exported).flatMap(([key, target]) =>
      key === '.' || typeof target === 'string' || target.types === undefined
        ? []
        : [[key.slice(2), join(packageRoot, target.types)] as const],
    );
    // The serve entry at least: an export map without subpaths would pass this vacuously.
    expect(subpaths.map(([subpath]) => subpath)).toContain('serve');
    for (const [subpath, types] of subpaths) {
      expect(existsSync(types)).toBe(true);
      expect(node10Types(pkg, subpath)).toBe(types);
    }
  });
});
