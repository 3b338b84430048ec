/**
 * close({ timeoutMs }) and a thread blocked inside a native call. worker.terminate() cannot
 * interrupt a koffi call (the gated worker's Atomics.wait, which it can, does not show this):
 * the call is abandoned at the timeout (its caller rejected, its capacity given back), but the
 * thread stops, and close() resolves, only once the native call returns. The thread is seen
 * blocked in read() through /proc, so the test orders nothing by time; Linux (glibc) only.
 */
import { closeSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import koffi from 'koffi';
import { afterEach, describe, expect, it } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { cleanup, codeOf, start, turns, until } from './fixtures/runtime-harness.js';

/** The fixture loads libc.so.6 and reads /proc: glibc Linux on x64 or arm64 (musl is skipped too). */
const header = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header;
const linux =
  process.platform === 'linux' &&
  (process.arch === 'x64' || process.arch === 'arm64') &&
  header?.glibcVersionRuntime !== undefined;
/** read's syscall number, as /proc/<pid>/task/<tid>/syscall shows it. */
const READ_SYSCALL = process.arch === 'x64' ? '0' : '63';

/** Some thread of this process is blocked in read(fd) now. */
function blockedInRead(fd: number): boolean {
  const arg = `0x${fd.toString(16)}`;
  for (const task of readdirSync('/proc/self/task')) {
    let fields: string[];
    try {
      fields = readFileSync(`/proc/self/task/${task}/syscall`, 'utf8').split(' ');
    } catch {
      continue; // the thread has gone
    }
    if (fields[0] === READ_SYSCALL && fields[1] === arg) return true;
  }
  return false;
}

afterEach(cleanup);

describe.skipIf(!linux)('close() and a thread inside a native call', () => {
  it('abandons the call at the timeout; the threads stop, and close() resolves, when the call returns', async () => {
    const pipe = koffi.load('libc.so.6').func('int pipe(_Out_ int *fds)') as (fds: Int32Array) => number;
    const fds = new Int32Array(2);
    expect(pipe(fds)).toBe(0);
    const [readEnd, writeEnd] = [fds[0]!, fds[1]!];
    let returned = false;
    const letItReturn = (): void => {
      if (!returned) writeSync(writeEnd, 'x');
      returned = true;
    };
    try {
      const hooks = new Int32Array(new SharedArrayBuffer(4));
      const rt = await start({
        worker: builtModuleUrl('test/fixtures/native-block-worker.js'),
        threads: 2,
        admission: { requests: 2 },
        workerData: { hooks: hooks.buffer },
      });
      const call = codeOf(rt.run({ fd: readEnd }));
      await until(() => blockedInRead(readEnd), 'the thread to block in read()');

      let closedBeforeReturn: boolean | undefined;
      const closing = rt.close({ timeoutMs: 0 }).then((result) => {
        closedBeforeReturn ??= !returned;
        return result;
      });
      // Abandoned at once: its caller hears of it and its capacity is back while the call runs.
      expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
      expect(rt.report()).toMatchObject({ depth: 0, running: 0 });
      await turns();
      expect(blockedInRead(readEnd)).toBe(true);
      expect(closedBeforeReturn).toBeUndefined();

      letItReturn();
      expect(await closing).toEqual({ clean: false, abandoned: 1 });
      expect(closedBeforeReturn).toBe(false);
      expect(rt.state).toBe('stopped');
      // Every thread is terminated, the idle one too, and a terminated thread runs no close hook.
      expect(Atomics.load(hooks, 0)).toBe(0);
    } finally {
      letItReturn(); // a failed assertion must not leave the thread (and cleanup) blocked
      closeSync(readEnd);
      closeSync(writeEnd);
    }
  }, 20_000);
});
