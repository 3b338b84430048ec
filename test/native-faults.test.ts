import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import type { NativeLibrary } from '../src/native/index.js';
import {
  FixtureFaults,
  loadNativeLibrary,
  NativeContext,
  NativeStatus,
  seededFloats,
} from '../src/native/index.js';

const [IN, OUT] = [16, 8];
const w = seededFloats(1, OUT * IN);
const b = seededFloats(2, OUT);
const x = (rows: number) => seededFloats(100 + rows, rows * IN);
/** Bytes one workspace holds: device x/y plus pinned staging x/y. */
const wsBytes = (rows: number) => 2 * 4 * rows * (IN + OUT);

function thrown(fn: () => unknown): { code?: string; nativeCode?: number; fatal?: boolean } {
  try {
    fn();
  } catch (err) {
    return err as { code?: string; nativeCode?: number; fatal?: boolean };
  }
  throw new Error('expected the call to throw');
}

describe('native fault injection (fixture)', () => {
  let lib: NativeLibrary;
  let faults: FixtureFaults;
  beforeAll(() => {
    buildFixture();
    lib = loadNativeLibrary('fixture');
    faults = new FixtureFaults(lib);
  });
  afterEach(() => faults.failAllocAfter(0));

  it('failing the nth allocation of open, at every step, releases what open had taken', () => {
    const before = faults.liveBytes();
    let failures = 0;
    for (let n = 1; ; n++) {
      faults.failAllocAfter(n);
      let ctx: NativeContext | undefined;
      try {
        ctx = NativeContext.open(lib);
      } catch (err) {
        expect(err).toMatchObject({ code: 'OMNI_ERR_NATIVE', nativeCode: NativeStatus.OUT_OF_MEMORY });
        expect(faults.liveBytes()).toBe(before);
        failures++;
        continue;
      }
      faults.failAllocAfter(0);
      ctx.close();
      break;
    }
    // Open takes three allocations (context, stream, workspace table): failures at 2 and 3 are part-way.
    expect(failures).toBe(3);
    expect(faults.liveBytes()).toBe(before);
  });

  it('failing an allocation part-way through a weight upload keeps the old weights', () => {
    const ctx = NativeContext.open(lib);
    ctx.uploadWeights(w, b, OUT, IN);
    const expected = ctx.linearGelu(x(2), 2);
    const base = ctx.stats();
    for (const n of [1, 2]) {
      faults.failAllocAfter(n);
      const err = thrown(() => ctx.uploadWeights(seededFloats(9, OUT * IN), seededFloats(10, OUT), OUT, IN));
      expect(err.nativeCode).toBe(NativeStatus.OUT_OF_MEMORY);
      expect(ctx.stats().liveBytes).toBe(base.liveBytes);
    }
    faults.failAllocAfter(0);
    expect(ctx.linearGelu(x(2), 2)).toEqual(expected);
    ctx.close();
  });

  it('failing each of the four workspace allocations releases the ones already taken', () => {
    const ctx = NativeContext.open(lib);
    ctx.uploadWeights(w, b, OUT, IN);
    const base = ctx.stats();
    let allocations = base.allocations;
    for (const n of [1, 2, 3, 4]) {
      faults.failAllocAfter(n);
      const err = thrown(() => ctx.linearGelu(x(5), 5));
      expect(err).toMatchObject({
        code: 'OMNI_ERR_NATIVE',
        nativeCode: NativeStatus.OUT_OF_MEMORY,
        fatal: false,
      });
      const now = ctx.stats();
      expect(now.liveBytes).toBe(base.liveBytes);
      expect(now.cachedWorkspaces).toBe(0);
      // n - 1 buffers were really taken (and given back) before the nth failed.
      expect(now.allocations - allocations).toBe(n - 1);
      allocations = now.allocations;
    }
    faults.failAllocAfter(0);
    expect(ctx.linearGelu(x(5), 5).length).toBe(5 * OUT);
    expect(ctx.stats().liveBytes).toBe(base.liveBytes + wsBytes(5));
    ctx.close();
  });

  it('a failed copy still synchronizes the stream, and the context keeps serving', () => {
    const ctx = NativeContext.open(lib);
    ctx.uploadWeights(w, b, OUT, IN);
    const expected = ctx.linearGelu(x(3), 3);
    const before = ctx.stats();
    faults.failNextCopy(ctx);
    const err = thrown(() => ctx.linearGelu(x(3), 3));
    expect(err).toMatchObject({
      code: 'OMNI_ERR_NATIVE',
      nativeCode: NativeStatus.COPY_FAILED,
      fatal: false,
    });
    const after = ctx.stats();
    expect(after.streamSyncs).toBe(before.streamSyncs + 1);
    expect(after.liveBytes).toBe(before.liveBytes);
    expect(ctx.linearGelu(x(3), 3)).toEqual(expected);

    // During an upload: synchronized too, new buffers freed, old weights kept.
    const mid = ctx.stats();
    faults.failNextCopy(ctx);
    expect(thrown(() => ctx.uploadWeights(w, b, OUT, IN)).nativeCode).toBe(NativeStatus.COPY_FAILED);
    expect(ctx.stats()).toMatchObject({ streamSyncs: mid.streamSyncs + 1, liveBytes: mid.liveBytes });
    expect(ctx.linearGelu(x(3), 3)).toEqual(expected);
    ctx.close();
  });

  it('an injected fatal error makes every later call fail with fatal: true; close still releases', () => {
    const before = faults.liveBytes();
    const ctx = NativeContext.open(lib);
    ctx.uploadWeights(w, b, OUT, IN);
    ctx.linearGelu(x(4), 4);
    faults.injectFatal(ctx);
    const calls: Array<() => unknown> = [
      () => ctx.linearGelu(x(4), 4),
      () => ctx.linearGelu(x(1), 1),
      () => ctx.uploadWeights(w, b, OUT, IN),
      () => ctx.stats(),
      () => faults.failNextCopy(ctx),
      () => faults.injectFatal(ctx),
    ];
    for (const call of calls) {
      expect(thrown(call)).toMatchObject({
        code: 'OMNI_ERR_NATIVE',
        nativeCode: NativeStatus.FATAL,
        fatal: true,
      });
    }
    ctx.close();
    expect(faults.liveBytes()).toBe(before);
  });

  it('the workspace cache is bounded by count, evicting the least recently used first', () => {
    const ctx = NativeContext.open(lib, { workspaceCount: 2 });
    ctx.uploadWeights(w, b, OUT, IN);
    for (const rows of [1, 2, 3]) ctx.linearGelu(x(rows), rows);
    let s = ctx.stats();
    expect(s).toMatchObject({
      cachedWorkspaces: 2,
      workspaceEvictions: 1,
      workspaceBytes: wsBytes(2) + wsBytes(3),
    });
    ctx.linearGelu(x(2), 2); // hit: no allocation, 2 becomes the most recent
    expect(ctx.stats().allocations).toBe(s.allocations);
    ctx.linearGelu(x(1), 1); // miss: evicts 3, the least recently used
    s = ctx.stats();
    expect(s).toMatchObject({
      cachedWorkspaces: 2,
      workspaceEvictions: 2,
      workspaceBytes: wsBytes(1) + wsBytes(2),
    });
    const allocations = s.allocations;
    ctx.linearGelu(x(2), 2);
    expect(ctx.stats().allocations).toBe(allocations);
    ctx.close();
  });

  it('the workspace cache is bounded by bytes, evicting before it allocates', () => {
    const limit = wsBytes(1) + wsBytes(2) + 16;
    const ctx = NativeContext.open(lib, { workspaceCount: 8, workspaceBytes: limit });
    ctx.uploadWeights(w, b, OUT, IN);
    let peak = ctx.stats().peakBytes;
    const weightsLive = ctx.stats().liveBytes;
    for (const rows of [1, 2, 3, 1, 2, 3, 3]) {
      ctx.linearGelu(x(rows), rows);
      const s = ctx.stats();
      expect(s.workspaceBytes).toBeLessThanOrEqual(limit);
      expect(s.liveBytes - weightsLive).toBe(s.workspaceBytes);
      peak = s.peakBytes;
    }
    // Evicting first means the cache never held more than the limit, not even during a miss.
    expect(peak - weightsLive).toBeLessThanOrEqual(limit);
    expect(ctx.stats().workspaceEvictions).toBeGreaterThanOrEqual(3);
    ctx.close();
  });

  it('contexts in parallel threads are independent; the allocation hook is per thread', async () => {
    // The worker is plain JavaScript (no TypeScript loader in worker threads on Node 20) and binds
    // the three calls it needs itself.
    const koffiPath = createRequire(import.meta.url).resolve('koffi');
    const source = `
      const { parentPort, workerData } = require('node:worker_threads');
      const koffi = require(workerData.koffiPath);
      const lib = koffi.load(workerData.libPath);
      const ctxT = koffi.pointer(koffi.opaque());
      const open = lib.func('omni_open', 'int', ['int', 'void *', koffi.out(koffi.pointer(ctxT))]);
      const upload = lib.func('omni_upload_weights', 'int', [ctxT, 'float *', 'size_t', 'float *', 'size_t', 'uint32', 'uint32']);
      const run = lib.func('omni_linear_gelu', 'int', [ctxT, 'float *', 'size_t', 'uint32', 'float *', 'size_t']);
      const close = lib.func('omni_close', 'int', [ctxT]);
      const { w, b, x, rows, out, inF, iterations } = workerData;
      const handle = [null];
      const codes = [open(0, null, handle), upload(handle[0], w, w.length, b, b.length, out, inF)];
      const y = new Float32Array(rows * out);
      for (let i = 0; i < iterations; i++) codes.push(run(handle[0], x, x.length, rows, y, y.length));
      codes.push(close(handle[0]));
      parentPort.postMessage({ codes, y });
    `;
    const rows = 9;
    const input = x(rows);
    const ctx = NativeContext.open(lib);
    ctx.uploadWeights(w, b, OUT, IN);
    const expected = ctx.linearGelu(input, rows);
    // Armed here: must fire on this thread's next allocation, never in the workers.
    faults.failAllocAfter(1);
    const workerData = {
      koffiPath,
      libPath: lib.path,
      w,
      b,
      x: input,
      rows,
      out: OUT,
      inF: IN,
      iterations: 200,
    };
    const results = await Promise.all(
      [0, 1].map(
        () =>
          new Promise<{ codes: number[]; y: Float32Array }>((resolve, reject) => {
            const worker = new Worker(source, { eval: true, workerData });
            worker.once('message', resolve);
            worker.once('error', reject);
          }),
      ),
    );
    for (const r of results) {
      expect(r.codes.every((c) => c === NativeStatus.OK)).toBe(true);
      expect(r.y).toEqual(expected);
    }
    expect(thrown(() => ctx.linearGelu(x(7), 7)).nativeCode).toBe(NativeStatus.OUT_OF_MEMORY);
    ctx.close();
  });
});
