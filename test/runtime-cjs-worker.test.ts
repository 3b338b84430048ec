/**
 * Worker modules written as CommonJS, which README offers (a CommonJS project loads the package
 * through require(esm)): Node's import() of one gives its whole `module.exports` as `default`,
 * so the definition is found either there (`module.exports = defineWorker(...)`, TypeScript's
 * `export =`) or, for transpiled ESM (`exports.default`, what tsc, esbuild and Babel emit for
 * `export default defineWorker(...)` in a CommonJS project, README's worker example among them),
 * one level below it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { cleanup, rejection, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

describe('a CommonJS worker module', () => {
  it('serves when it assigns its definition to module.exports', async () => {
    const rt = await start({ worker: builtModuleUrl('test/fixtures/cjs-module-exports-worker.cjs') });
    await expect(rt.run({ n: 7 })).resolves.toBe(21);
  });

  it('serves when compiled from `export default defineWorker(...)` (exports.default)', async () => {
    const rt = await start({ worker: builtModuleUrl('test/fixtures/cjs-default-export-worker.cjs') });
    await expect(rt.run({ n: 7 })).resolves.toBe(14);
  });

  it('is still refused when its exports.default is not defineWorker(...)', async () => {
    const err = await rejection(
      start({ worker: builtModuleUrl('test/fixtures/cjs-other-default-worker.cjs') }),
    );
    expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });
});
