import { execFileSync } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import {
  kRawHandle,
  loadNativeLibrary,
  NativeContext,
  NativeStatus,
  seededFloats,
} from '../src/native/index.js';
import { packageRoot } from '../src/paths.js';
import { fixtureLibrary } from './fixtures/native-fixture-library.js';
import { tempDirs } from './fixtures/temp-dirs.js';
import { thrown, thrownCode } from './fixtures/thrown.js';

const tempDir = tempDirs('omni-faults-');

const [IN, OUT] = [16, 8];
const w = seededFloats(1, OUT * IN);
const b = seededFloats(2, OUT);
const x = (rows: number) => seededFloats(100 + rows, rows * IN);
/** Bytes a workspace of `capacity` rows holds: device x/y plus pinned staging x/y. */
const wsBytes = (capacity: number) => 2 * 4 * capacity * (IN + OUT);
/** The row capacity a miss allocates: rows rounded up to a power of two (when it fits the byte limit). */
const capacityFor = (rows: number) => 2 ** Math.ceil(Math.log2(rows));
/** Allocations one new workspace takes: device x, device y, staging x, staging y. */
const WS_ALLOCATIONS = 4;

describe('native fault injection (fixture)', () => {
  const fixture = fixtureLibrary();
  afterEach(() => fixture.faults.failAllocAfter(0));

  it('failing the nth allocation of open, at every step, releases what open had taken', () => {
    const before = fixture.faults.liveBytes();
    let failures = 0;
    for (let n = 1; ; n++) {
      fixture.faults.failAllocAfter(n);
      let ctx: NativeContext | undefined;
      try {
        ctx = NativeContext.open(fixture.lib);
      } catch (err) {
        expect(err).toMatchObject({ code: 'OMNI_ERR_NATIVE', nativeCode: NativeStatus.OUT_OF_MEMORY });
        expect(fixture.faults.liveBytes()).toBe(before);
        failures++;
        continue;
      }
      fixture.faults.failAllocAfter(0);
      ctx.close();
      break;
    }
    // Open takes three allocations (context, stream, workspace table): failures at 2 and 3 are part-way.
    expect(failures).toBe(3);
    expect(fixture.faults.liveBytes()).toBe(before);
  });

  it('failing an allocation part-way through a weight upload keeps the old weights', () => {
    const ctx = NativeContext.open(fixture.lib);
    ctx.uploadWeights(w, b, OUT, IN);
    const expected = ctx.linearGelu(x(2), 2);
    const base = ctx.stats();
    for (const n of [1, 2]) {
      fixture.faults.failAllocAfter(n);
      const err = thrown(() => ctx.uploadWeights(seededFloats(9, OUT * IN), seededFloats(10, OUT), OUT, IN));
      expect(err.nativeCode).toBe(NativeStatus.OUT_OF_MEMORY);
      expect(ctx.stats().liveBytes).toBe(base.liveBytes);
    }
    fixture.faults.failAllocAfter(0);
    expect(ctx.linearGelu(x(2), 2)).toEqual(expected);
    ctx.close();
  });

  it('failing each of the four workspace allocations releases the ones already taken', () => {
    const ctx = NativeContext.open(fixture.lib);
    ctx.uploadWeights(w, b, OUT, IN);
    const base = ctx.stats();
    let allocations = base.allocations;
    for (const n of [1, 2, 3, 4]) {
      fixture.faults.failAllocAfter(n);
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
    fixture.faults.failAllocAfter(0);
    expect(ctx.linearGelu(x(5), 5).length).toBe(5 * OUT);
    // The workspace holds 5 rows rounded up to a power of two.
    expect(ctx.stats().liveBytes).toBe(base.liveBytes + wsBytes(capacityFor(5)));
    ctx.close();
  });

  // Its own process, under a 3 GiB address-space limit (it uses about 1 GiB): the 4 GiB output
  // cannot fit, whatever else the process holds.
  it.each([
    ['linearGelu', 'context'],
    ['referenceLinearGelu', 'reference'],
  ])('an output %s cannot allocate is OMNI_E_OUT_OF_MEMORY, not an uncoded RangeError', (_what, which) => {
    const script = join(packageRoot, 'dist', 'test', 'fixtures', 'native-unallocatable-output.js');
    const stdout = execFileSync(
      'bash',
      ['-c', 'ulimit -v 3145728 && exec "$0" "$1" "$2"', process.execPath, script, which],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(JSON.parse(stdout)).toEqual({
      name: 'NativeError',
      code: 'OMNI_ERR_NATIVE',
      nativeCode: NativeStatus.OUT_OF_MEMORY,
    });
  });

  it('a failed copy still synchronizes the stream, and the context keeps serving', () => {
    const ctx = NativeContext.open(fixture.lib);
    ctx.uploadWeights(w, b, OUT, IN);
    const expected = ctx.linearGelu(x(3), 3);
    const before = ctx.stats();
    fixture.faults.failCopyAfter(ctx);
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

    // The output copy (the second of a call), after the kernel ran: the same.
    const out = new Float32Array(3 * OUT).fill(7);
    const beforeOutput = ctx.stats();
    fixture.faults.failCopyAfter(ctx, 2);
    expect(thrown(() => ctx.linearGelu(x(3), 3, out)).nativeCode).toBe(NativeStatus.COPY_FAILED);
    expect(ctx.stats()).toMatchObject({
      streamSyncs: beforeOutput.streamSyncs + 1,
      liveBytes: beforeOutput.liveBytes,
      calls: beforeOutput.calls,
    });
    expect(Array.from(out).every((v) => v === 7)).toBe(true); // nothing half-written to the caller
    expect(ctx.linearGelu(x(3), 3)).toEqual(expected);

    // Disarmed (0), nothing fails.
    fixture.faults.failCopyAfter(ctx, 1);
    fixture.faults.failCopyAfter(ctx, 0);
    expect(ctx.linearGelu(x(3), 3)).toEqual(expected);

    // During an upload: synchronized too, new buffers freed, old weights kept.
    const mid = ctx.stats();
    fixture.faults.failCopyAfter(ctx);
    expect(thrown(() => ctx.uploadWeights(w, b, OUT, IN)).nativeCode).toBe(NativeStatus.COPY_FAILED);
    expect(ctx.stats()).toMatchObject({ streamSyncs: mid.streamSyncs + 1, liveBytes: mid.liveBytes });
    expect(ctx.linearGelu(x(3), 3)).toEqual(expected);
    ctx.close();
  });

  it('a workspace made for a call whose copy then failed stays cached, counted, and serves the next call', () => {
    const ctx = NativeContext.open(fixture.lib);
    ctx.uploadWeights(w, b, OUT, IN);
    const before = ctx.stats();
    fixture.faults.failCopyAfter(ctx, 1); // a miss: the workspace is made, then the input copy fails
    expect(thrown(() => ctx.linearGelu(x(3), 3)).nativeCode).toBe(NativeStatus.COPY_FAILED);
    const failed = ctx.stats();
    expect(failed).toMatchObject({
      cachedWorkspaces: before.cachedWorkspaces + 1,
      workspaceBytes: before.workspaceBytes + wsBytes(capacityFor(3)),
      liveBytes: before.liveBytes + wsBytes(capacityFor(3)),
      calls: before.calls,
    });
    ctx.linearGelu(x(3), 3);
    expect(ctx.stats()).toMatchObject({ allocations: failed.allocations, liveBytes: failed.liveBytes });
    ctx.close();
  });

  // A stream sync fails on CUDA as cu_sync maps a non-sticky error: DEVICE, not fatal. Each test
  // checks the status, what stays as it was, and that the context keeps serving.
  const deviceError = { code: 'OMNI_ERR_NATIVE', nativeCode: NativeStatus.DEVICE, fatal: false };

  it('a failed sync before an eviction frees nothing: cache, bytes and counts stay; the next call evicts', () => {
    const start = fixture.faults.liveBytes();
    const ref = NativeContext.open(fixture.lib);
    ref.uploadWeights(w, b, OUT, IN);
    const expected = ref.linearGelu(x(3), 3);
    ref.close();
    const ctx = NativeContext.open(fixture.lib, { workspaceCount: 1 });
    ctx.uploadWeights(w, b, OUT, IN);
    ctx.linearGelu(x(1), 1); // fills the one entry (capacity 1): a 3-row call must evict it
    const before = ctx.stats();
    const out = new Float32Array(3 * OUT).fill(7);
    fixture.faults.failSyncAfter(ctx); // the eviction's sync is the call's first
    expect(thrown(() => ctx.linearGelu(x(3), 3, out))).toMatchObject(deviceError);
    // Only the attempted sync is counted: no eviction, no allocation, no bytes, no call.
    expect(ctx.stats()).toEqual({ ...before, streamSyncs: before.streamSyncs + 1 });
    expect(out.every((v) => v === 7)).toBe(true);
    expect(ctx.linearGelu(x(3), 3, out)).toEqual(expected);
    expect(ctx.stats()).toMatchObject({
      cachedWorkspaces: 1,
      workspaceBytes: wsBytes(capacityFor(3)),
      workspaceEvictions: before.workspaceEvictions + 1,
      calls: before.calls + 1,
    });
    ctx.close();
    expect(fixture.faults.liveBytes()).toBe(start);
  });

  it('a failed sync at the end of an upload frees the new weights and keeps computing with the old', () => {
    const start = fixture.faults.liveBytes();
    const ctx = NativeContext.open(fixture.lib);
    ctx.uploadWeights(w, b, OUT, IN);
    const expected = ctx.linearGelu(x(3), 3);
    const before = ctx.stats();
    // Another output width: new weights kept by mistake would change the call's shape as well.
    const out2 = OUT - 3;
    const [w2, b2] = [seededFloats(11, out2 * IN), seededFloats(12, out2)];
    fixture.faults.failSyncAfter(ctx);
    expect(thrown(() => ctx.uploadWeights(w2, b2, out2, IN))).toMatchObject(deviceError);
    expect(ctx.stats()).toMatchObject({
      liveBytes: before.liveBytes,
      // Both new buffers were taken, then given back.
      allocations: before.allocations + 2,
      streamSyncs: before.streamSyncs + 1,
      cachedWorkspaces: before.cachedWorkspaces,
      calls: before.calls,
    });
    expect(ctx.linearGelu(x(3), 3)).toEqual(expected);
    // Not sticky: the same upload now goes through.
    ctx.uploadWeights(w2, b2, out2, IN);
    expect(ctx.linearGelu(x(3), 3).length).toBe(3 * out2);
    ctx.close();
    expect(fixture.faults.liveBytes()).toBe(start);
  });

  it('a failed sync after the output copy leaves the output unwritten and the call uncounted', () => {
    const start = fixture.faults.liveBytes();
    const ctx = NativeContext.open(fixture.lib);
    ctx.uploadWeights(w, b, OUT, IN);
    const expected = ctx.linearGelu(x(3), 3); // caches its workspace: a hit syncs once, at its end
    const before = ctx.stats();
    const out = new Float32Array(3 * OUT).fill(7);
    fixture.faults.failSyncAfter(ctx);
    expect(thrown(() => ctx.linearGelu(x(3), 3, out))).toMatchObject(deviceError);
    expect(ctx.stats()).toEqual({ ...before, streamSyncs: before.streamSyncs + 1 });
    expect(out.every((v) => v === 7)).toBe(true);
    expect(ctx.linearGelu(x(3), 3, out)).toEqual(expected);

    // The countdown counts syncs: armed at 2, the next call (one sync) passes, the one after fails.
    fixture.faults.failSyncAfter(ctx, 2);
    expect(ctx.linearGelu(x(3), 3)).toEqual(expected);
    expect(thrown(() => ctx.linearGelu(x(3), 3))).toMatchObject(deviceError);
    // Disarmed (0), nothing fails.
    fixture.faults.failSyncAfter(ctx, 1);
    fixture.faults.failSyncAfter(ctx, 0);
    expect(ctx.linearGelu(x(3), 3)).toEqual(expected);

    // Close ignores a failed sync of its own (as on CUDA) and still releases everything.
    fixture.faults.failSyncAfter(ctx);
    ctx.close();
    expect(fixture.faults.liveBytes()).toBe(start);
  });

  it('a failed copy whose own drain sync fails too still reports COPY_FAILED, and that sync was the armed one', () => {
    const start = fixture.faults.liveBytes();
    const ctx = NativeContext.open(fixture.lib);
    ctx.uploadWeights(w, b, OUT, IN);
    const expected = ctx.linearGelu(x(3), 3);
    const before = ctx.stats();
    fixture.faults.failCopyAfter(ctx);
    fixture.faults.failSyncAfter(ctx);
    expect(thrown(() => ctx.linearGelu(x(3), 3))).toMatchObject({
      code: 'OMNI_ERR_NATIVE',
      nativeCode: NativeStatus.COPY_FAILED,
      fatal: false,
    });
    expect(ctx.stats()).toEqual({ ...before, streamSyncs: before.streamSyncs + 1 });
    expect(ctx.linearGelu(x(3), 3)).toEqual(expected);
    ctx.close();
    expect(fixture.faults.liveBytes()).toBe(start);
  });

  it('the reference refuses an output sharing bytes with an input, however its views reach them', () => {
    const n = 8;
    const [wn, bn] = [seededFloats(5, n * n), seededFloats(6, n)];
    const want = fixture.faults.referenceLinearGelu(seededFloats(7, 2 * n), 2, wn, bn, n, n);
    const refused = (call: () => unknown): void => {
      expect(thrown(call)).toMatchObject({
        code: 'OMNI_ERR_NATIVE',
        nativeCode: NativeStatus.INVALID_ARGUMENT,
      });
    };
    // One buffer: x in [0, 2n), then 2n free floats. Outputs of the right length (2n) that
    // start inside x overlap it; one that starts right after it does not.
    const shared = new Float32Array(4 * n);
    shared.set(seededFloats(7, 2 * n));
    const xs = shared.subarray(0, 2 * n);
    for (const at of [0, 1, 2 * n - 1]) {
      refused(() => fixture.faults.referenceLinearGelu(xs, 2, wn, bn, n, n, shared.subarray(at, at + 2 * n)));
    }
    expect(fixture.faults.referenceLinearGelu(xs, 2, wn, bn, n, n, shared.subarray(2 * n))).toEqual(want);
    expect(xs).toEqual(seededFloats(7, 2 * n));
    // Nor does one that ends right where x starts.
    const after = shared.subarray(2 * n);
    after.set(seededFloats(7, 2 * n));
    expect(fixture.faults.referenceLinearGelu(after, 2, wn, bn, n, n, shared.subarray(0, 2 * n))).toEqual(
      want,
    );
    // The weights count as inputs too.
    const wb = new Float32Array(n * n + 2 * n);
    wb.set(wn);
    refused(() =>
      fixture.faults.referenceLinearGelu(
        xs,
        2,
        wb.subarray(0, n * n),
        bn,
        n,
        n,
        wb.subarray(n * n - 1, n * n - 1 + 2 * n),
      ),
    );
    // The same shared memory through two SharedArrayBuffer objects (as two messages deliver it),
    // and an output view without a prototype: the check is on the memory, not the objects.
    const sab = new SharedArrayBuffer(2 * n * 4);
    const sx = new Float32Array(sab);
    sx.set(seededFloats(7, 2 * n));
    refused(() =>
      fixture.faults.referenceLinearGelu(sx, 2, wn, bn, n, n, new Float32Array(structuredClone(sab))),
    );
    refused(() =>
      fixture.faults.referenceLinearGelu(
        xs,
        2,
        wn,
        bn,
        n,
        n,
        Object.setPrototypeOf(shared.subarray(1, 1 + 2 * n), null),
      ),
    );
  });

  it('an injected fatal error makes every later call fail with fatal: true; close still releases', () => {
    const before = fixture.faults.liveBytes();
    const ctx = NativeContext.open(fixture.lib);
    ctx.uploadWeights(w, b, OUT, IN);
    ctx.linearGelu(x(4), 4);
    fixture.faults.injectFatal(ctx);
    const calls: Array<() => unknown> = [
      () => ctx.linearGelu(x(4), 4),
      () => ctx.linearGelu(x(1), 1),
      () => ctx.uploadWeights(w, b, OUT, IN),
      () => ctx.stats(),
      () => fixture.faults.failCopyAfter(ctx),
      () => fixture.faults.failSyncAfter(ctx),
      () => fixture.faults.injectFatal(ctx),
    ];
    for (const call of calls) {
      expect(thrown(call)).toMatchObject({
        code: 'OMNI_ERR_NATIVE',
        nativeCode: NativeStatus.FATAL,
        fatal: true,
      });
    }
    ctx.close();
    expect(fixture.faults.liveBytes()).toBe(before);
  });

  it('the hooks refuse a closed context, and a context of another library, before any native call', () => {
    const closed = NativeContext.open(fixture.lib);
    closed.close();
    // A copy of the fixture at another path is another library, with its own hooks.
    const copy = join(tempDir(), 'libomni_fixture.so');
    copyFileSync(fixture.lib.path, copy);
    const other = NativeContext.open(loadNativeLibrary('fixture', { path: copy }));
    try {
      for (const ctx of [closed, other]) {
        expect(thrownCode(() => fixture.faults.injectFatal(ctx))).toBe('OMNI_ERR_INVALID_ARGUMENT');
        expect(thrownCode(() => fixture.faults.failCopyAfter(ctx))).toBe('OMNI_ERR_INVALID_ARGUMENT');
        expect(thrownCode(() => fixture.faults.failSyncAfter(ctx))).toBe('OMNI_ERR_INVALID_ARGUMENT');
      }
      // Neither hook reached the other library's context: it still serves.
      other.uploadWeights(w, b, OUT, IN);
      expect(other.linearGelu(x(3), 3).length).toBe(3 * OUT);
    } finally {
      other.close();
    }
  });

  it('a call reuses the smallest cached workspace whose row capacity fits it', () => {
    const ctx = NativeContext.open(fixture.lib, { workspaceCount: 4 });
    ctx.uploadWeights(w, b, OUT, IN);
    const base = ctx.stats();
    ctx.linearGelu(x(5), 5); // miss: capacity 8
    expect(ctx.stats()).toMatchObject({ cachedWorkspaces: 1, workspaceBytes: wsBytes(8) });
    expect(ctx.stats().allocations - base.allocations).toBe(WS_ALLOCATIONS);
    for (const rows of [1, 2, 3, 4, 6, 7, 8]) ctx.linearGelu(x(rows), rows); // all fit capacity 8
    ctx.linearGelu(x(2), 2);
    let s = ctx.stats();
    expect(s).toMatchObject({ cachedWorkspaces: 1, workspaceEvictions: 0, workspaceBytes: wsBytes(8) });
    expect(s.allocations - base.allocations).toBe(WS_ALLOCATIONS);
    ctx.linearGelu(x(9), 9); // miss: capacity 16
    ctx.linearGelu(x(1), 1); // fits both: takes 8, the smaller
    ctx.linearGelu(x(12), 12); // fits only 16
    s = ctx.stats();
    expect(s).toMatchObject({
      cachedWorkspaces: 2,
      workspaceEvictions: 0,
      workspaceBytes: wsBytes(8) + wsBytes(16),
    });
    expect(s.allocations - base.allocations).toBe(2 * WS_ALLOCATIONS);
    // Results do not depend on which (larger, previously used) workspace served them.
    const fresh = NativeContext.open(fixture.lib);
    fresh.uploadWeights(w, b, OUT, IN);
    for (const rows of [1, 3, 8, 9, 16])
      expect(ctx.linearGelu(x(rows), rows)).toEqual(fresh.linearGelu(x(rows), rows));
    fresh.close();
    ctx.close();
  });

  it('the workspace cache is bounded by count, evicting the least recently used first', () => {
    const ctx = NativeContext.open(fixture.lib, { workspaceCount: 2 });
    ctx.uploadWeights(w, b, OUT, IN);
    for (const rows of [1, 2, 3]) ctx.linearGelu(x(rows), rows); // capacities 1, 2, 4: 1 is evicted
    let s = ctx.stats();
    expect(s).toMatchObject({
      cachedWorkspaces: 2,
      workspaceEvictions: 1,
      workspaceBytes: wsBytes(2) + wsBytes(4),
    });
    ctx.linearGelu(x(2), 2); // hit on capacity 2 (the smallest fit): it becomes the most recent
    ctx.linearGelu(x(1), 1); // hit on capacity 2 too: rows 1 needs no workspace of its own now
    expect(ctx.stats().allocations).toBe(s.allocations);
    ctx.linearGelu(x(5), 5); // miss (capacity 8): evicts 4, the least recently used
    s = ctx.stats();
    expect(s).toMatchObject({
      cachedWorkspaces: 2,
      workspaceEvictions: 2,
      workspaceBytes: wsBytes(2) + wsBytes(8),
    });
    const allocations = s.allocations;
    for (const rows of [2, 3, 4, 8]) ctx.linearGelu(x(rows), rows);
    expect(ctx.stats().allocations).toBe(allocations);
    ctx.close();
  });

  it('the workspace cache is bounded by bytes, evicting before it allocates', () => {
    const unit = wsBytes(1);
    const limit = 6 * unit;
    const ctx = NativeContext.open(fixture.lib, { workspaceCount: 8, workspaceBytes: limit });
    ctx.uploadWeights(w, b, OUT, IN);
    const weightsLive = ctx.stats().liveBytes;
    const check = (capacities: number[], evictions: number): void => {
      const s = ctx.stats();
      const bytes = capacities.reduce((sum, c) => sum + wsBytes(c), 0);
      expect(s).toMatchObject({
        cachedWorkspaces: capacities.length,
        workspaceBytes: bytes,
        workspaceEvictions: evictions,
      });
      expect(s.liveBytes - weightsLive).toBe(bytes);
      // Evicting first means the cache never held more than the limit, not even during a miss.
      expect(s.peakBytes - weightsLive).toBeLessThanOrEqual(limit);
    };
    ctx.linearGelu(x(1), 1);
    ctx.linearGelu(x(2), 2);
    check([1, 2], 0);
    ctx.linearGelu(x(3), 3); // capacity 4: 1 + 2 + 4 units > 6, so the LRU (1) goes first
    check([2, 4], 1);
    // Capacity 8 would not fit the limit at all: exactly 5 rows are allocated, after evicting both.
    ctx.linearGelu(x(5), 5);
    check([5], 3);
    ctx.linearGelu(x(4), 4); // fits the 5-row workspace
    check([5], 3);
    ctx.linearGelu(x(6), 6); // exactly the limit
    check([6], 4);
    // More than the whole limit: refused, and what is cached stays cached.
    expect(thrown(() => ctx.linearGelu(x(7), 7))).toMatchObject({
      code: 'OMNI_ERR_NATIVE',
      nativeCode: NativeStatus.WORKSPACE_LIMIT,
    });
    check([6], 4);
    ctx.close();
  });

  // Every workspace size is a multiple of 8 bytes, so a limit that is not one is where a limit
  // rounded (up) on its way into C would show; a limit exactly a power of two's size is where the
  // fallback's comparison would.
  it.each([
    ['exactly the power of two', wsBytes(4), 4],
    ['one byte short of it (not a multiple of 8)', wsBytes(4) - 1, 3],
  ])('a byte limit %s: 3 rows get the largest capacity within it', (_name, limit, capacity) => {
    const ctx = NativeContext.open(fixture.lib, { workspaceBytes: limit });
    ctx.uploadWeights(w, b, OUT, IN);
    ctx.linearGelu(x(3), 3);
    expect(ctx.stats()).toMatchObject({ cachedWorkspaces: 1, workspaceBytes: wsBytes(capacity) });
    // C's own check (NativeContext makes the same one first): 4 rows fit only the exact limit.
    const y = new Float32Array(4 * OUT);
    const status = fixture.lib.raw.omni_linear_gelu(ctx[kRawHandle], x(4), 4 * IN, 4, y, 4 * OUT);
    expect(status).toBe(capacity === 4 ? NativeStatus.OK : NativeStatus.WORKSPACE_LIMIT);
    ctx.close();
  });

  it('rows varying over 1..16 (a load generator) settle on a handful of workspaces', () => {
    const ctx = NativeContext.open(fixture.lib); // the default 4 entries
    ctx.uploadWeights(w, b, OUT, IN);
    const base = ctx.stats();
    const draws = seededFloats(7, 400);
    for (const d of draws) {
      const rows = 1 + Math.floor(((d + 1) / 2) * 16); // uniform over 1..16
      ctx.linearGelu(x(rows), rows);
    }
    const s = ctx.stats();
    expect(s.calls - base.calls).toBe(draws.length);
    // At most one workspace per capacity 1, 2, 4, 8, 16; once 16 exists every call hits, so at
    // most one eviction. Matching exact rows instead would evict on most of the 400 calls.
    expect(s.allocations - base.allocations).toBeLessThanOrEqual(5 * WS_ALLOCATIONS);
    expect(s.workspaceEvictions).toBeLessThanOrEqual(1);
    expect(s.cachedWorkspaces).toBeLessThanOrEqual(4);
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
    const ctx = NativeContext.open(fixture.lib);
    ctx.uploadWeights(w, b, OUT, IN);
    const expected = ctx.linearGelu(input, rows);
    // Armed here: must fire on this thread's next allocation, never in the workers.
    fixture.faults.failAllocAfter(1);
    const workerData = {
      koffiPath,
      libPath: fixture.lib.path,
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
    // 17 rows do not fit the cached 16-row workspace: the next allocation (this thread's) fails.
    expect(thrown(() => ctx.linearGelu(x(17), 17)).nativeCode).toBe(NativeStatus.OUT_OF_MEMORY);
    ctx.close();
  });
});
