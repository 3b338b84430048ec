import { existsSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildCuda, buildFixture, findNvcc } from '../scripts/build-native.mjs';
import type { RawNativeApi, RawOpenOptions } from '../src/native/index.js';
import {
  ABI_VERSION,
  defaultLibraryPath,
  FixtureFaults,
  loadNativeLibrary,
  MAX_WORKSPACE_COUNT,
  NativeContext,
  NativeStatus,
  seededFloats,
  selectBackend,
} from '../src/native/index.js';
import { thrownCode } from './fixtures/thrown.js';

const hasNvcc = findNvcc() !== null;
// A GPU machine without a toolkit may still carry a library built elsewhere: test that one.
const hasCudaLibrary = hasNvcc || existsSync(defaultLibraryPath('cuda'));
// The driver's control node exists only where a GPU (and its driver) is installed.
const hasGpu = existsSync('/dev/nvidiactl');

describe.skipIf(!hasCudaLibrary)('CUDA backend', () => {
  beforeAll(() => {
    buildFixture();
    buildCuda();
  }, 300_000);

  it('the library built here loads through koffi and reports the ABI version', () => {
    const lib = loadNativeLibrary('cuda');
    expect(lib).toMatchObject({ backend: 'cuda', backendName: 'cuda', abiVersion: ABI_VERSION });
  });

  it('has no fault hooks: FixtureFaults on it is OMNI_ERR_INVALID_ARGUMENT', () => {
    const lib = loadNativeLibrary('cuda');
    expect(lib.fixture).toBeNull();
    expect(thrownCode(() => new FixtureFaults(lib))).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it('validates its arguments before touching a device', () => {
    const { raw } = loadNativeLibrary('cuda');
    expect(raw.omni_open(-1, null, [null])).toBe(NativeStatus.INVALID_ARGUMENT);
    expect(raw.omni_linear_gelu(null, null, 0, 1, null, 0)).toBe(NativeStatus.INVALID_ARGUMENT);
    expect(raw.omni_close(null)).toBe(NativeStatus.OK);
  });

  // The fixture's C is the reference for the checks C makes itself: the same bad input must get the
  // same status from both libraries. Only those that need no device can run without a GPU.
  it('refuses every bad input it can check without a device with the status the fixture gives', () => {
    const backends = { cuda: loadNativeLibrary('cuda').raw, fixture: loadNativeLibrary('fixture').raw };
    const opts = (o: Partial<RawOpenOptions>): RawOpenOptions => ({
      workspace_count: 0,
      reserved: 0,
      workspace_bytes: 0,
      ...o,
    });
    const f = new Float32Array(4);
    const cases: [string, (raw: RawNativeApi, out: [unknown]) => number][] = [
      ['open: out is NULL', (raw) => raw.omni_open(0, null, null as unknown as [null])],
      ['open: negative device', (raw, out) => raw.omni_open(-1, null, out)],
      ['open: reserved is not 0', (raw, out) => raw.omni_open(0, opts({ reserved: 1 }), out)],
      [
        'open: too many workspaces',
        (raw, out) => raw.omni_open(0, opts({ workspace_count: MAX_WORKSPACE_COUNT + 1 }), out),
      ],
      ['upload_weights: NULL ctx', (raw) => raw.omni_upload_weights(null, f, 4, f, 2, 2, 2)],
      ['linear_gelu: NULL ctx', (raw) => raw.omni_linear_gelu(null, f, 4, 2, f, 4)],
      ['stats: NULL ctx', (raw) => raw.omni_stats(null, {})],
      ['stats: NULL ctx and out', (raw) => raw.omni_stats(null, null)],
      ['close: NULL (a no-op)', (raw) => raw.omni_close(null)],
    ];
    for (const [name, call] of cases) {
      const got = Object.entries(backends).map(([backend, raw]) => ({ backend, status: call(raw, [null]) }));
      const want = name.startsWith('close') ? NativeStatus.OK : NativeStatus.INVALID_ARGUMENT;
      expect({ name, got }).toEqual({
        name,
        got: [
          { backend: 'cuda', status: want },
          { backend: 'fixture', status: want },
        ],
      });
    }
  });

  it.skipIf(hasGpu)('without a GPU, opening device 0 is a NativeError naming the CUDA error', () => {
    const lib = loadNativeLibrary('cuda');
    let err: { code?: string; nativeCode?: number; fatal?: boolean; message?: string } | undefined;
    try {
      NativeContext.open(lib, { device: 0 }).close();
    } catch (e) {
      err = e as typeof err;
    }
    expect(err).toMatchObject({ code: 'OMNI_ERR_NATIVE', nativeCode: NativeStatus.NO_DEVICE, fatal: false });
    // The point of this message is to name the failing CUDA call, so its text is the behaviour here.
    expect(err?.message).toContain('cudaSetDevice(0)');
    const choice = selectBackend('auto', {});
    expect(choice.backend).toBe('fixture');
    expect(choice.reason).toContain('CUDA device 0');
  });

  it.runIf(hasGpu)('with a GPU, matches the fixture on a small shape', () => {
    const [rows, inF, outF] = [37, 200, 70];
    const x = seededFloats(1, rows * inF, 2);
    const w = seededFloats(2, outF * inF, 1 / Math.sqrt(inF));
    const b = seededFloats(3, outF, 0.5);
    const results = (['cuda', 'fixture'] as const).map((backend) => {
      const ctx = NativeContext.open(loadNativeLibrary(backend));
      try {
        ctx.uploadWeights(w, b, outF, inF);
        return ctx.linearGelu(x, rows);
      } finally {
        ctx.close();
      }
    });
    const [gpu, cpu] = results as [Float32Array, Float32Array];
    let worst = 0;
    for (let i = 0; i < gpu.length; i++) worst = Math.max(worst, Math.abs(gpu[i]! - cpu[i]!));
    expect(worst).toBeLessThan(1e-4);
  });
});
