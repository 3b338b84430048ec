/**
 * docs/runtime.md's threadEnds example (the two blocks after "threadEnds (a `ThreadEnds`") under
 * its own races: its worker's init and close hook run as test/fixtures/holder-worker.ts (checked
 * here to match the page line for line), its main thread's giveBack, exited and stopped as
 * written there, over native contexts of the C fixture, so every handle's fate shows in the
 * fixture's live bytes. Threads are held in their exit by a sub-thread in read() on a pipe and
 * let go by the test's write, never ordered by time.
 */
import { closeSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ThreadEnds } from '../src/index.js';
import { FixtureFaults, loadNativeLibrary, NativeStatus } from '../src/native/index.js';
import { builtModuleUrl, packageRoot } from '../src/paths.js';
import { blockedInRead, canBlockInRead, libcPipe } from './fixtures/blocked-in-read.js';
import { cleanup, codeOf, start, until } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const library = loadNativeLibrary('fixture');
const faults = new FixtureFaults(library);

/** The docs/runtime.md block that starts with `first`, as lines. */
function readmeBlock(first: string): string[] {
  const page = readFileSync(join(packageRoot, 'docs', 'runtime.md'), 'utf8');
  const at = page.indexOf(`\`\`\`ts\n${first}`);
  expect(at, `a docs/runtime.md block starting ${first}`).toBeGreaterThan(-1);
  const body = page.slice(at + '```ts\n'.length);
  return body.slice(0, body.indexOf('```')).split('\n');
}

describe("docs/runtime.md's threadEnds example", () => {
  it("the fixture runs the page's worker lines, in order (but its imports, declarations and handler)", () => {
    const lines = readmeBlock('// holder-worker.ts').filter(
      (line) =>
        line.trim() !== '' &&
        !/^(\/\/ holder-worker\.ts|import |declare )/.test(line) &&
        !line.startsWith('export default defineWorker('),
    );
    expect(lines.length).toBeGreaterThan(5);
    const fixture = readFileSync(join(packageRoot, 'test/fixtures/holder-worker.ts'), 'utf8');
    let from = fixture.indexOf("// From here on, the page's lines");
    for (const line of lines) {
      const found = fixture.indexOf(`${line}\n`, from);
      expect(found, line).toBeGreaterThan(-1);
      from = found + line.length;
    }
  });

  it.skipIf(!canBlockInRead)(
    'a thread replaced again before its predecessor has exited: every pair taken, the runtime still serves, no handle lost',
    async () => {
      const pipes = [libcPipe(), libcPipe()];
      const written = new Set<number>();
      const letExit = (i: number): void => {
        if (!written.has(i)) writeSync(pipes[i]![1], 'x');
        written.add(i);
      };
      try {
        const before = faults.liveBytes();
        const closeHandle = (handle: bigint): void => {
          expect(library.raw.omni_close(handle)).toBe(NativeStatus.OK);
        };
        // The page's main thread, as written there.
        const threads = 1;
        const slots = new BigInt64Array(new SharedArrayBuffer(2 * threads * 2 * 8));
        const giveBack = (i: number): void => {
          const handle = Atomics.exchange(slots, 2 * i + 1, 0n);
          if (handle !== 0n) closeHandle(handle); // the thread's close hook did not take it
          Atomics.store(slots, 2 * i, 0n); // free for another thread
        };
        const log: (number | string)[] = [];
        const threadEnds: ThreadEnds = {
          exited: (threadId) => {
            log.push(threadId);
            for (let i = 0; i < 2 * threads; i++) {
              if (Atomics.load(slots, 2 * i) === BigInt(threadId)) giveBack(i);
            }
          },
          stopped: () => {
            log.push('stopped');
            for (let i = 0; i < 2 * threads; i++) giveBack(i); // threads that ended unseen
          },
        };
        const rt = await start({
          worker: builtModuleUrl('test/fixtures/holder-worker.js'),
          threads,
          workerData: slots.buffer,
          threadEnds,
        });
        const perHandle = faults.liveBytes() - before;
        expect(perHandle).toBeGreaterThan(0);
        // The first thread dies, held in its exit; its replacement takes the other pair and dies
        // the same way: both pairs are taken when the third thread's init runs.
        for (const [readEnd] of pipes) {
          expect(await codeOf(rt.run({ die: readEnd }))).toBe('OMNI_ERR_WORKER_EXITED');
        }
        expect(await rt.run({ value: 1 })).toEqual({ value: 1 });
        expect(rt.state).toBe('ready');
        expect(faults.liveBytes() - before).toBe(3 * perHandle);
        for (const [readEnd] of pipes) expect(blockedInRead(readEnd)).toBe(true);
        letExit(0);
        letExit(1);
        await until(() => log.length === 2, 'both dead threads to be reported');
        expect(faults.liveBytes() - before).toBe(perHandle);
        expect(await rt.close()).toEqual({ clean: true, abandoned: 0 });
        expect(log).toHaveLength(4);
        expect(log[3]).toBe('stopped');
        expect(faults.liveBytes()).toBe(before);
      } finally {
        letExit(0);
        letExit(1);
        await cleanup();
        for (const [readEnd, writeEnd] of pipes) {
          closeSync(readEnd);
          closeSync(writeEnd);
        }
      }
    },
  );
});
