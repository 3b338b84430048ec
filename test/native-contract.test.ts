/**
 * The fixture's C contract at its edges, and the TypeScript boundary in front of it: limits that
 * are themselves valid, checks C makes on its own (not only behind TypeScript's), exact counters
 * (allocations, peak, stream syncs per call and per evicting miss), who owns which error message
 * (each context its own, the no-context slot per thread), and what a failed upload keeps.
 * Ownership is about which message a slot holds, so those tests compare message identity; every
 * failure itself is still asserted by its status code.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import koffi from 'koffi';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import type { NativeLibrary, RawNativeApi } from '../src/native/index.js';
import {
  FixtureFaults,
  kRawHandle,
  loadNativeLibrary,
  MAX_FEATURES,
  MAX_ROWS,
  MAX_WORKSPACE_COUNT,
  NativeContext,
  NativeStatus,
  seededFloats,
} from '../src/native/index.js';
import { maxViolation } from './fixtures/native-tolerance.js';
import { thrown } from './fixtures/thrown.js';

const [IN, OUT] = [16, 8];
const w = seededFloats(1, OUT * IN);
const b = seededFloats(2, OUT);
const x = (rows: number, inF = IN) => seededFloats(100 + rows, rows * inF);
const wsBytes = (capacity: number, inF = IN, outF = OUT) => 2 * 4 * capacity * (inF + outF);

describe('the native contract at its edges (fixture)', () => {
  let lib: NativeLibrary;
  let raw: RawNativeApi;
  let faults: FixtureFaults;
  const open: NativeContext[] = [];
  const track = (ctx: NativeContext): NativeContext => {
    open.push(ctx);
    return ctx;
  };
  beforeAll(() => {
    buildFixture();
    lib = loadNativeLibrary('fixture');
    raw = lib.raw;
    faults = new FixtureFaults(lib);
  });
  afterEach(() => {
    faults.failAllocAfter(0);
    for (const ctx of open.splice(0)) ctx.close();
  });

  // The limit itself is valid, in TypeScript and in C.
  it('workspaceCount exactly MAX_WORKSPACE_COUNT (64) is accepted and honoured', () => {
    const ctx = track(NativeContext.open(lib, { workspaceCount: MAX_WORKSPACE_COUNT }));
    const handle: [unknown] = [null];
    expect(raw.omni_open(0, { workspace_count: 64, reserved: 0, workspace_bytes: 0 }, handle)).toBe(
      NativeStatus.OK,
    );
    expect(raw.omni_close(handle[0])).toBe(NativeStatus.OK);
    ctx.uploadWeights(w, b, OUT, IN);
    // Capacities 1, 2, 4, ..., 65536 are 17 distinct workspaces: all stay cached (the default 4 would evict).
    for (let k = 0; k <= 6; k++) ctx.linearGelu(x(2 ** k), 2 ** k);
    expect(ctx.stats()).toMatchObject({ cachedWorkspaces: 7, workspaceEvictions: 0 });
  });

  // Counters are exact from open on, and peak tracks live.
  it('a fresh context reports its three allocations and peak >= live at every step', () => {
    const ctx = track(NativeContext.open(lib));
    let s = ctx.stats();
    expect(s.allocations).toBe(3); // context, stream, workspace table
    expect(s.peakBytes).toBe(s.liveBytes);
    ctx.uploadWeights(w, b, OUT, IN);
    s = ctx.stats();
    expect(s.peakBytes).toBe(s.liveBytes); // only grew so far
    ctx.linearGelu(x(5), 5);
    s = ctx.stats();
    expect(s.peakBytes).toBe(s.liveBytes);
    // A replacing upload holds old and new weights at once: peak is above live afterwards.
    const before = s.liveBytes;
    ctx.uploadWeights(w, b, OUT, IN);
    s = ctx.stats();
    expect(s.liveBytes).toBe(before);
    expect(s.peakBytes).toBeGreaterThan(s.liveBytes);
  });

  // MAX_FEATURES itself is a valid feature count, on both sides.
  it('in_features and out_features of exactly MAX_FEATURES are accepted', () => {
    const ctx = track(NativeContext.open(lib));
    const wi = seededFloats(5, MAX_FEATURES, 0.01);
    const bi = seededFloats(6, 1);
    ctx.uploadWeights(wi, bi, 1, MAX_FEATURES);
    const xi = seededFloats(7, MAX_FEATURES);
    expect(maxViolation(ctx.linearGelu(xi, 1), xi, wi, bi, 1, 1, MAX_FEATURES)).toBeLessThanOrEqual(1);
    ctx.uploadWeights(wi, seededFloats(8, MAX_FEATURES), MAX_FEATURES, 1);
    expect(ctx.linearGelu(new Float32Array([0.5]), 1).length).toBe(MAX_FEATURES);
  });

  // The reference has its own copy of the limit checks: each limit is valid there too.
  it('the C reference takes MAX_ROWS rows, and MAX_FEATURES inputs or outputs', () => {
    const one = new Float32Array([0.5]);
    const zero = new Float32Array([0]);
    const rows = faults.referenceLinearGelu(new Float32Array(MAX_ROWS).fill(1), MAX_ROWS, one, zero, 1, 1);
    expect(rows.length).toBe(MAX_ROWS);
    const wide = seededFloats(11, MAX_FEATURES, 0.01);
    const xw = seededFloats(12, MAX_FEATURES);
    const yIn = faults.referenceLinearGelu(xw, 1, wide, zero, 1, MAX_FEATURES);
    expect(maxViolation(yIn, xw, wide, zero, 1, 1, MAX_FEATURES)).toBeLessThanOrEqual(1);
    const yOut = faults.referenceLinearGelu(one, 1, wide, seededFloats(13, MAX_FEATURES), MAX_FEATURES, 1);
    expect(yOut.length).toBe(MAX_FEATURES);
  });

  // C-side checks that only the TypeScript layer covered.
  it('raw upload with in_features 0 or a NULL bias is OMNI_E_INVALID_ARGUMENT with a message', () => {
    const ctx = track(NativeContext.open(lib));
    const handle = ctx[kRawHandle];
    expect(raw.omni_upload_weights(handle, w, 0, b, OUT, OUT, 0)).toBe(NativeStatus.INVALID_ARGUMENT);
    expect(raw.omni_last_error(handle)).not.toBe('no error');
    expect(raw.omni_upload_weights(handle, w, w.length, null, OUT, OUT, IN)).toBe(
      NativeStatus.INVALID_ARGUMENT,
    );
  });

  // The row limit is checked by C even when the lengths agree with it.
  it('raw linear_gelu with MAX_ROWS + 1 rows and matching lengths is OMNI_E_INVALID_ARGUMENT', () => {
    const ctx = track(NativeContext.open(lib));
    ctx.uploadWeights(new Float32Array([1]), new Float32Array([0]), 1, 1);
    const rows = MAX_ROWS + 1;
    const xr = new Float32Array(rows);
    const yr = new Float32Array(rows).fill(3);
    const before = ctx.stats();
    expect(raw.omni_linear_gelu(ctx[kRawHandle], xr, rows, rows, yr, rows)).toBe(
      NativeStatus.INVALID_ARGUMENT,
    );
    expect(yr.every((v) => v === 3)).toBe(true);
    expect(ctx.stats()).toMatchObject({ calls: before.calls, cachedWorkspaces: before.cachedWorkspaces });
  });

  // NativeContext refuses rows over the byte limit itself (as WORKSPACE_LIMIT), so only a raw call
  // shows that the status comes from C too, for a CUDA library driven by other bindings.
  it('raw linear_gelu with rows over the workspace byte limit is OMNI_E_WORKSPACE_LIMIT from C', () => {
    const ctx = track(NativeContext.open(lib, { workspaceBytes: wsBytes(5) }));
    ctx.uploadWeights(w, b, OUT, IN);
    ctx.linearGelu(x(5), 5);
    const before = ctx.stats();
    const y = new Float32Array(6 * OUT).fill(3);
    expect(raw.omni_linear_gelu(ctx[kRawHandle], x(6), 6 * IN, 6, y, 6 * OUT)).toBe(
      NativeStatus.WORKSPACE_LIMIT,
    );
    expect(raw.omni_last_error(ctx[kRawHandle])).not.toBe('no error');
    expect(y.every((v) => v === 3)).toBe(true);
    // Refused before eviction: the cached workspace is kept.
    expect(ctx.stats()).toEqual(before);
  });

  // A length one too long is as wrong as one too short: C must not take the first w_need floats.
  it('raw upload with w_len or b_len one too long is OMNI_E_INVALID_ARGUMENT, the old weights kept', () => {
    const ctx = track(NativeContext.open(lib));
    ctx.uploadWeights(w, b, OUT, IN);
    const expected = ctx.linearGelu(x(2), 2);
    const before = ctx.stats();
    const wLong = seededFloats(40, OUT * IN + 1);
    const bLong = seededFloats(41, OUT + 1);
    const handle = ctx[kRawHandle];
    expect(raw.omni_upload_weights(handle, wLong, OUT * IN + 1, b, OUT, OUT, IN)).toBe(
      NativeStatus.INVALID_ARGUMENT,
    );
    expect(raw.omni_upload_weights(handle, w, OUT * IN, bLong, OUT + 1, OUT, IN)).toBe(
      NativeStatus.INVALID_ARGUMENT,
    );
    expect(ctx.stats()).toMatchObject({ liveBytes: before.liveBytes, allocations: before.allocations });
    expect(ctx.linearGelu(x(2), 2)).toEqual(expected);
  });

  // Replacing weights frees the old ones, after a stream synchronization.
  it('a successful re-upload frees the previous weights after one stream sync', () => {
    const ctx = track(NativeContext.open(lib));
    ctx.uploadWeights(w, b, OUT, IN);
    const s0 = ctx.stats();
    ctx.uploadWeights(seededFloats(9, OUT * IN), seededFloats(10, OUT), OUT, IN);
    const s1 = ctx.stats();
    expect(s1.liveBytes).toBe(s0.liveBytes);
    expect(s1.streamSyncs).toBe(s0.streamSyncs + 1);
    const before = faults.liveBytes();
    ctx.uploadWeights(w, b, OUT, IN);
    expect(faults.liveBytes()).toBe(before);
  });

  // Stream syncs are exact: one per successful call, one more per evicting miss.
  it('stream syncs: one per call, plus exactly one per miss that evicts (however many it evicts)', () => {
    const ctx = track(NativeContext.open(lib, { workspaceCount: 8, workspaceBytes: 6 * wsBytes(1) }));
    ctx.uploadWeights(w, b, OUT, IN);
    let s = ctx.stats();
    const step = (rows: number, syncs: number, evictions: number) => {
      ctx.linearGelu(x(rows), rows);
      const now = ctx.stats();
      const got = {
        syncs: now.streamSyncs - s.streamSyncs,
        evictions: now.workspaceEvictions - s.workspaceEvictions,
      };
      expect({ rows, ...got }).toEqual({ rows, syncs, evictions });
      s = now;
    };
    step(1, 1, 0); // miss, no eviction
    step(1, 1, 0); // hit
    step(2, 1, 0); // miss (capacities 1 + 2 = 3 units)
    step(3, 2, 1); // capacity 4: evicts 1 (one sync) then the call's own sync
    step(5, 2, 2); // exactly 5 rows: evicts both 2 and 4 after a single sync
  });

  // A context's message is its own: other contexts and the thread slot do not touch it,
  // And a fatal context keeps reporting the message that made it fatal.
  it('each context keeps its own last error; a fatal context reports its fatal message', () => {
    const a = track(NativeContext.open(lib));
    const bctx = track(NativeContext.open(lib));
    a.uploadWeights(w, b, OUT, IN);
    bctx.uploadWeights(w, b, OUT, IN);
    const ha = a[kRawHandle];
    const hb = bctx[kRawHandle];
    const y = new Float32Array(OUT);
    expect(raw.omni_linear_gelu(ha, x(1), IN + 1, 1, y, OUT)).toBe(NativeStatus.INVALID_ARGUMENT);
    const messageA = raw.omni_last_error(ha);
    expect(raw.omni_stats(hb, null)).toBe(NativeStatus.INVALID_ARGUMENT);
    const messageB = raw.omni_last_error(hb);
    expect(raw.omni_open(-1, null, [null])).toBe(NativeStatus.INVALID_ARGUMENT);
    expect(messageA).not.toBe(messageB);
    expect(raw.omni_last_error(ha)).toBe(messageA);
    expect(raw.omni_last_error(hb)).toBe(messageB);

    faults.injectFatal(a);
    const fatalMessage = raw.omni_last_error(ha);
    expect(fatalMessage).not.toBe(messageA);
    // Failures elsewhere (another context, no context) in between.
    expect(raw.omni_stats(hb, null)).toBe(NativeStatus.INVALID_ARGUMENT);
    expect(raw.omni_open(-1, null, [null])).toBe(NativeStatus.INVALID_ARGUMENT);
    const err = thrown(() => a.linearGelu(x(1), 1));
    expect(err).toMatchObject({ nativeCode: NativeStatus.FATAL, fatal: true });
    expect(err.message).toBe(fatalMessage);
  });

  // A workspace sized for one weight shape is never reused for another, and either feature count
  // alone tells shapes apart: one sized for (in, out) is too small (or mis-strided) for (in, out')
  // and for (in', out).
  it.each([
    ['both feature counts', 64, 40],
    ['out features only', IN, 40],
    ['in features only', 64, OUT],
  ])('after an upload changing the %s, calls get a workspace of the new shape', (_name, in2, out2) => {
    const ctx = track(NativeContext.open(lib));
    ctx.uploadWeights(w, b, OUT, IN);
    ctx.linearGelu(x(8), 8);
    const w2 = seededFloats(30, out2 * in2, 0.2);
    const b2 = seededFloats(31, out2);
    ctx.uploadWeights(w2, b2, out2, in2);
    const x2 = seededFloats(32, 4 * in2);
    const y = ctx.linearGelu(x2, 4);
    expect(ctx.stats()).toMatchObject({
      cachedWorkspaces: 2,
      workspaceBytes: wsBytes(8) + wsBytes(4, in2, out2),
    });
    const fresh = track(NativeContext.open(lib));
    fresh.uploadWeights(w2, b2, out2, in2);
    expect(y).toEqual(fresh.linearGelu(x2, 4));
  });

  // The magic check: memory that is not an open context (here zeroed memory of the caller's) is
  // refused by every entry point, which neither writes to it nor frees it.
  it('a handle that is not an open context is OMNI_E_INVALID_ARGUMENT everywhere, its memory untouched', () => {
    const foreign = new Uint8Array(4096);
    const fx = lib.fixture!;
    const y = new Float32Array(OUT);
    const calls: Array<[string, () => number]> = [
      ['upload', () => raw.omni_upload_weights(foreign, w, w.length, b, b.length, OUT, IN)],
      ['linear', () => raw.omni_linear_gelu(foreign, x(1), IN, 1, y, OUT)],
      ['stats', () => raw.omni_stats(foreign, {})],
      ['fail copy', () => fx.omni_fixture_fail_copy_after(foreign, 1)],
      ['fail sync', () => fx.omni_fixture_fail_sync_after(foreign, 1)],
      ['inject fatal', () => fx.omni_fixture_inject_fatal(foreign)],
      ['close', () => raw.omni_close(foreign)],
    ];
    for (const [name, call] of calls) {
      expect({ name, status: call() }).toEqual({ name, status: NativeStatus.INVALID_ARGUMENT });
      // The thread slot holds this failure, and a foreign handle's message is that slot's.
      expect(raw.omni_last_error(foreign)).toBe(raw.omni_last_error(null));
      expect(raw.omni_last_error(null)).not.toBe('no error');
    }
    expect(foreign.every((v) => v === 0)).toBe(true);
  });

  // omni.h: "On failure *out is set to NULL", whatever the caller's variable held before.
  it('a failed omni_open sets *out to NULL even when it held a pointer', () => {
    // The package binds *out as out-only; an in-out binding hands C the caller's old value.
    const options = koffi.struct({
      workspace_count: 'uint32',
      reserved: 'uint32',
      workspace_bytes: 'uint64',
    });
    const openInOut = koffi
      .load(lib.path)
      .func('omni_open', 'int', [
        'int',
        koffi.pointer(options),
        koffi.inout(koffi.pointer(koffi.pointer(koffi.opaque()))),
      ]);
    const stale = track(NativeContext.open(lib))[kRawHandle];
    for (const [device, opts] of [
      [-1, null],
      [0, { workspace_count: 65, reserved: 0, workspace_bytes: 0 }],
      [0, { workspace_count: 0, reserved: 1, workspace_bytes: 0 }],
    ] as const) {
      const out: [unknown] = [stale];
      expect(openInOut(device, opts, out)).toBe(NativeStatus.INVALID_ARGUMENT);
      expect(out[0]).toBeNull();
    }
  });

  // The output's element type is checked even when its length happens to match.
  it('out as a Uint8Array of rows * outFeatures elements: OMNI_ERR_INVALID_ARGUMENT, nothing written', () => {
    const ctx = track(NativeContext.open(lib));
    ctx.uploadWeights(w, b, OUT, IN);
    const backing = new Uint8Array(4 * 3 * OUT).fill(7);
    const out = backing.subarray(0, 3 * OUT);
    expect(thrown(() => ctx.linearGelu(x(3), 3, out as unknown as Float32Array)).code).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    expect(backing.every((v) => v === 7)).toBe(true);
  });

  // A failed upload keeps the previous shape as well as the previous weights.
  it('an upload of another shape that fails keeps serving the old shape', () => {
    const ctx = track(NativeContext.open(lib));
    ctx.uploadWeights(w, b, OUT, IN);
    const expected = ctx.linearGelu(x(2), 2);
    faults.failAllocAfter(1);
    expect(
      thrown(() => ctx.uploadWeights(seededFloats(9, 4 * 32), seededFloats(10, 4), 4, 32)).nativeCode,
    ).toBe(NativeStatus.OUT_OF_MEMORY);
    faults.failAllocAfter(0);
    expect([ctx.outFeatures, ctx.inFeatures]).toEqual([OUT, IN]);
    expect(ctx.linearGelu(x(2), 2)).toEqual(expected);
  });

  // A fraction is refused in TypeScript (koffi would truncate it), not passed on to C.
  it('fractional sizes are OMNI_ERR_INVALID_ARGUMENT before any native call', () => {
    expect(thrown(() => NativeContext.open(lib, { workspaceCount: 2.5 })).code).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    const ctx = track(NativeContext.open(lib));
    ctx.uploadWeights(w, b, OUT, IN);
    // 1.5 rows of 16 inputs is 24 whole floats: the length check alone does not catch it.
    expect(thrown(() => ctx.linearGelu(seededFloats(3, 24), 1.5)).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  // omni_open_options.workspace_bytes is 64 bits: a limit past 4 GiB is not its low 32 bits (8 here).
  it('a workspaceBytes past 4 GiB is that limit, not its low 32 bits', () => {
    const ctx = track(NativeContext.open(lib, { workspaceBytes: 2 ** 32 + 8 }));
    ctx.uploadWeights(w, b, OUT, IN);
    ctx.linearGelu(x(4), 4);
    expect(ctx.stats().workspaceBytes).toBe(wsBytes(4));
  });

  // Zero is not a byte limit (C would silently read it as "the default").
  it('workspaceBytes 0 is OMNI_ERR_INVALID_ARGUMENT', () => {
    expect(thrown(() => NativeContext.open(lib, { workspaceBytes: 0 })).code).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
  });

  // The no-context message slot is per thread.
  it("a thread's no-context error message is not overwritten by another thread's", async () => {
    const koffiPath = createRequire(import.meta.url).resolve('koffi');
    const sync = new Int32Array(new SharedArrayBuffer(8));
    const source = `
      const { parentPort, workerData } = require('node:worker_threads');
      const koffi = require(workerData.koffiPath);
      const lib = koffi.load(workerData.libPath);
      const ctxT = koffi.pointer(koffi.opaque());
      const open = lib.func('omni_open', 'int', ['int', 'void *', koffi.out(koffi.pointer(ctxT))]);
      const lastError = lib.func('omni_last_error', 'const char *', [ctxT]);
      const sync = workerData.sync;
      const code = open(-7, null, [null]);
      const mine = lastError(null);
      Atomics.store(sync, 0, 1); Atomics.notify(sync, 0);
      Atomics.wait(sync, 1, 0); // until the main thread has failed its own no-context call
      parentPort.postMessage({ code, mine, after: lastError(null) });
    `;
    const worker = new Worker(source, { eval: true, workerData: { koffiPath, libPath: lib.path, sync } });
    const result = new Promise<{ code: number; mine: string; after: string }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await Atomics.waitAsync(sync, 0, 0).value; // the worker has failed its own call
    expect(raw.omni_open(-3, null, [null])).toBe(NativeStatus.INVALID_ARGUMENT);
    const mainMessage = raw.omni_last_error(null);
    Atomics.store(sync, 1, 1);
    Atomics.notify(sync, 1);
    const r = await result;
    await worker.terminate();
    expect(r.code).toBe(NativeStatus.INVALID_ARGUMENT);
    expect(r.mine).toContain('-7');
    expect(r.after).toBe(r.mine);
    expect(mainMessage).toContain('-3');
  });
});
