/**
 * How each runtime thread loads its entry. piscina require()s the file it is given before it
 * falls back to import(); given an ES module, Node 20.19+ takes require(esm), which instantiates
 * the whole import graph synchronously, and a thread terminated inside that (close with a
 * timeout, a forced close, a stuck replacement) aborts the whole process with a fatal V8 check
 * (`v8::Module::IsGraphAsync must be used on an instantiated module`). The abort needs a
 * termination landing within a window of microseconds, so it is reproduced by hand, not here:
 * this checks the cause instead, that no thread's loading reaches require(esm) at all.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/paths.js';
import { runNode } from './fixtures/cli-process.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-entry-load-');
const fixture = (name: string) => join(packageRoot, 'dist', 'test', 'fixtures', name);

describe('loading a runtime thread', () => {
  it('never goes through require(esm), so terminating a loading thread cannot abort the process', async () => {
    const log = join(tempDir(), 'require-esm.log');
    const { code, stdout } = await runNode(fixture('require-esm-script.js'), [], 30_000, {
      options: ['--require', fixture('require-esm-probe.cjs')],
      env: { OMNI_REQUIRE_ESM_LOG: log },
    });
    expect({ code, stdout }).toEqual({ code: 0, stdout: 'echoed\n' });
    expect(existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []).toEqual([]);
  }, 40_000);
});
