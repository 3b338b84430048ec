/**
 * The shipped .d.ts as a consumer's compiler meets them: a project outside this repository with
 * `omni-runtime` in its node_modules (a link to this package, resolved through package.json
 * `exports` to the built dist/), type-checked by tsc under strict settings a user may choose.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const dir = tempDirs('omni-package-types-')();
mkdirSync(join(dir, 'node_modules'));
symlinkSync(packageRoot, join(dir, 'node_modules', 'omni-runtime'), 'dir');
symlinkSync(join(packageRoot, 'node_modules', '@types'), join(dir, 'node_modules', '@types'), 'dir');
writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module' }));

/** Writes `code` as the consumer's only module and type-checks it with these compiler options. */
function typecheck(
  name: string,
  code: string,
  options: Record<string, unknown>,
): { status: number | null; output: string } {
  const project = join(dir, name);
  mkdirSync(project);
  writeFileSync(join(project, 'main.ts'), code);
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
        types: ['node'],
        ...options,
      },
      files: ['main.ts'],
    }),
  );
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
});
