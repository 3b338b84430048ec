/**
 * An unclosed runtime and the process's life (docs/runtime.md): its
 * threads alone do not keep the process alive, as piscina's do not, but a call in flight does,
 * and so does a caller waiting for admission: a script that never calls close() still gets its
 * answers and then exits by itself. A thread piscina is still starting holds it too (Limits).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { builtModuleUrl, packageRoot } from '../src/paths.js';
import { runNode } from './fixtures/cli-process.js';

const run = promisify(execFile);

const SCRIPT = `
import { LinearRuntime } from ${JSON.stringify(builtModuleUrl('src/index.js'))};
const lr = await LinearRuntime.start({
  backend: 'fixture', threads: 1, inFeatures: 64, outFeatures: 8, admission: { requests: 1, wait: true },
});
// One call runs; the other two wait for admission, admitted as the calls before them end.
for (const rows of [1, 2, 3]) lr.run(new Float32Array(64 * rows)).then((y) => console.log('answer', y.length));
console.log('submitted');
`;

describe('a runtime never closed', () => {
  // What docs/limits.md says of a thread piscina is starting: it holds the process, until the
  // runtime's startTimeoutMs ends it when its init never finishes.
  it('whose replacement thread stays in its init: the process lives until startTimeoutMs ends that thread', async () => {
    const script = join(packageRoot, 'dist', 'test', 'fixtures', 'starting-thread-holds-script.js');
    // The script makes the replacement's startTimeoutMs due itself: the limit only bounds a hang.
    const { code, stdout } = await runNode(script, [], 40_000);
    expect({ code, stdout }).toEqual({ code: 0, stdout: 'held\nOMNI_ERR_WORKER_EXITED failed\n' });
  }, 50_000);

  it('answers the call in flight and the callers waiting for admission, then lets the process exit', async () => {
    // The bound only stops a hung child; what is asserted is how it ended.
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', SCRIPT], {
      timeout: 60_000,
    });
    expect(stdout.trim().split('\n')).toEqual(['submitted', 'answer 8', 'answer 16', 'answer 24']);
  });
});
