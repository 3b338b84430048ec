import { execFileSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import {
  defaultLibraryPath,
  loadNativeLibrary,
  NativeContext,
  NativeStatus,
  resolveDevice,
  selectBackend,
} from '../src/native/index.js';
import { koffi } from '../src/native/koffi.js';
import { tempDirs } from './fixtures/temp-dirs.js';
import { thrown, thrownCode } from './fixtures/thrown.js';

const tempDir = tempDirs('omni-backend-');

/**
 * A stand-in CUDA library (the real one needs a GPU to open): a device opens only if it is `only`;
 * any other fails with status FAIL.
 */
const STUB_CUDA = `
#include <stddef.h>
#define API __attribute__((visibility("default")))
static int token;
static int live;
API int stub_live(void) { return live; }
API int omni_abi_version(void) { return 1; }
API const char *omni_backend_name(void) { return "cuda"; }
API int omni_open(int device, const void *options, void **out) {
  (void)options;
  *out = device == ONLY ? &token : NULL;
  live += device == ONLY;
  return device == ONLY ? 0 : FAIL;
}
API int omni_close(void *ctx) { live -= ctx != NULL; return 0; }
API int omni_upload_weights(void) { return 1; }
API int omni_linear_gelu(void) { return 1; }
API int omni_stats(void) { return 1; }
API const char *omni_last_error(void *ctx) { (void)ctx; return "stub: no such device"; }
`;

describe('backend selection and device resolution', () => {
  /** Builds the stub under a new path (the loader caches libraries by path). */
  const stubCuda = (only: number, fail: number = NativeStatus.NO_DEVICE): string => {
    const dir = tempDir();
    const source = join(dir, `stub-${only}.c`);
    writeFileSync(source, STUB_CUDA);
    const path = join(dir, `libomni_cuda_stub_${only}.so`);
    execFileSync(
      process.env.CC || 'cc',
      ['-shared', '-fPIC', `-DONLY=${only}`, `-DFAIL=${fail}`, source, '-o', path],
      { stdio: 'pipe' },
    );
    return path;
  };
  beforeAll(() => {
    buildFixture();
  });

  it('resolveDevice: the option wins, then OMNI_CUDA_DEVICE, then 0', () => {
    expect(resolveDevice(undefined, {})).toBe(0);
    expect(resolveDevice(undefined, { OMNI_CUDA_DEVICE: '' })).toBe(0);
    // Blank is unset too, not a malformed number: device 0.
    expect(resolveDevice(undefined, { OMNI_CUDA_DEVICE: ' \t' })).toBe(0);
    expect(resolveDevice(undefined, { OMNI_CUDA_DEVICE: '3' })).toBe(3);
    expect(resolveDevice(undefined, { OMNI_CUDA_DEVICE: ' 2 ' })).toBe(2);
    expect(resolveDevice(1, { OMNI_CUDA_DEVICE: '3' })).toBe(1);
    // The upper edge is a device like the others, from either source.
    expect(resolveDevice(1023, {})).toBe(1023);
    expect(resolveDevice(undefined, { OMNI_CUDA_DEVICE: '1023' })).toBe(1023);
  });

  it.each([
    ['OMNI_CUDA_DEVICE=abc', () => resolveDevice(undefined, { OMNI_CUDA_DEVICE: 'abc' })],
    ['OMNI_CUDA_DEVICE=-1', () => resolveDevice(undefined, { OMNI_CUDA_DEVICE: '-1' })],
    ['OMNI_CUDA_DEVICE=1.5', () => resolveDevice(undefined, { OMNI_CUDA_DEVICE: '1.5' })],
    ['OMNI_CUDA_DEVICE=0x1', () => resolveDevice(undefined, { OMNI_CUDA_DEVICE: '0x1' })],
    ['OMNI_CUDA_DEVICE=1024', () => resolveDevice(undefined, { OMNI_CUDA_DEVICE: '1024' })],
    ['device 1024', () => resolveDevice(1024, {})],
    ['device NaN', () => resolveDevice(Number.NaN, {})],
    ['device 0.5', () => resolveDevice(0.5, {})],
    ['OMNI_BACKEND=tpu', () => selectBackend(undefined, { OMNI_BACKEND: 'tpu' })],
    ['backend "gpu"', () => selectBackend('gpu' as 'cuda', {})],
    ['selectBackend options null', () => selectBackend('fixture', {}, null as never)],
    ['selectBackend options a string', () => selectBackend('fixture', {}, 'fixture' as never)],
    // A hand-made environment is an option like the others: null is not "no environment".
    ['selectBackend env null', () => selectBackend('fixture', null as never)],
    ['selectBackend env a string', () => selectBackend('fixture', 'OMNI_BACKEND=cuda' as never)],
    ['OMNI_BACKEND not a string', () => selectBackend(undefined, { OMNI_BACKEND: 1 } as never)],
    ['resolveDevice env null', () => resolveDevice(undefined, null as never)],
    // Not ignored for an explicit backend either (its contexts would refuse it later).
    ['fixture with device -1', () => selectBackend('fixture', {}, { device: -1 })],
    ['cuda with OMNI_CUDA_DEVICE=abc', () => selectBackend('cuda', { OMNI_CUDA_DEVICE: 'abc' })],
    ['OMNI_CUDA_DEVICE not a string', () => resolveDevice(undefined, { OMNI_CUDA_DEVICE: 3 } as never)],
    ['OMNI_CUDA_DEVICE a boolean', () => resolveDevice(undefined, { OMNI_CUDA_DEVICE: true } as never)],
    ['OMNI_BACKEND an object', () => selectBackend(undefined, { OMNI_BACKEND: {} } as never)],
  ])('%s: OMNI_ERR_INVALID_ARGUMENT', (_name, call) => {
    expect(thrownCode(call)).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it('an explicit fixture preference, or OMNI_BACKEND=fixture, selects the fixture and says why', () => {
    expect(selectBackend('fixture', { OMNI_BACKEND: 'cuda' })).toMatchObject({
      backend: 'fixture',
      reason: 'requested',
    });
    const fromEnv = selectBackend(undefined, { OMNI_BACKEND: 'fixture' });
    expect(fromEnv).toMatchObject({ backend: 'fixture', reason: 'OMNI_BACKEND=fixture' });
    expect(fromEnv.library.backendName).toBe('fixture');
    // Read as the CLI reads it: padding around the name is not part of it.
    expect(selectBackend(undefined, { OMNI_BACKEND: ' fixture\t' })).toMatchObject({
      backend: 'fixture',
      reason: 'OMNI_BACKEND=fixture',
    });
  });

  it('with neither a preference nor OMNI_BACKEND (or a blank one), auto probes CUDA', () => {
    const cudaPath = stubCuda(0);
    for (const env of [{}, { OMNI_BACKEND: ' ' }]) {
      const choice = selectBackend(undefined, env, { cudaPath });
      expect(choice).toMatchObject({ backend: 'cuda', reason: 'auto: CUDA device 0 opened' });
    }
  });

  it('auto closes the context its probe opened, and falls back to the fixture at fixturePath', () => {
    const cudaPath = stubCuda(5);
    const live = koffi().load(cudaPath).func('stub_live', 'int', []) as () => number;
    expect(selectBackend('auto', {}, { cudaPath, device: 5 }).backend).toBe('cuda');
    expect(live()).toBe(0);
    // Another path to the same fixture: the choice must be loaded from the one given.
    const fixturePath = join(tempDir(), 'libomni_fixture_link.so');
    symlinkSync(defaultLibraryPath('fixture'), fixturePath);
    const choice = selectBackend('auto', {}, { cudaPath, device: 4, fixturePath });
    expect(choice.backend).toBe('fixture');
    expect(choice.library.path).toBe(fixturePath);
    expect(live()).toBe(0);
  });

  // omni.h: open on a device whose CUDA context this process already poisoned is FATAL. The
  // device does not open, so 'auto' takes the fixture, as it does for NO_DEVICE.
  it('auto falls back to the fixture when the device is poisoned (open FATAL), saying why', () => {
    const cudaPath = stubCuda(1, NativeStatus.FATAL);
    const choice = selectBackend('auto', {}, { cudaPath, device: 0 });
    expect(choice.backend).toBe('fixture');
    expect(choice.reason).toContain('CUDA device 0 could not be opened');
    // The same open, made directly: a coded, fatal NativeError.
    const err = thrown(() =>
      NativeContext.open(loadNativeLibrary('cuda', { path: cudaPath }), { device: 0 }),
    );
    expect(err).toMatchObject({ code: 'OMNI_ERR_NATIVE', nativeCode: NativeStatus.FATAL, fatal: true });
  });

  it('auto falls back to the fixture when the CUDA library is missing, naming the path', () => {
    const choice = selectBackend('auto', {}, { cudaPath: '/nonexistent/libomni_cuda.so' });
    expect(choice.backend).toBe('fixture');
    expect(choice.reason).toContain('/nonexistent/libomni_cuda.so');
    const ctx = NativeContext.open(choice.library);
    ctx.close();
  });

  it('auto refuses a malformed device even where the CUDA library does not load', () => {
    const cudaPath = '/nonexistent/libomni_cuda.so';
    expect(thrownCode(() => selectBackend('auto', { OMNI_CUDA_DEVICE: 'abc' }, { cudaPath }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    expect(thrownCode(() => selectBackend('auto', {}, { cudaPath, device: -1 }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
  });

  // DESIGN.md: device selection is explicit, never a hard-coded device 0; 'auto' probes that device.
  it("'auto' probes the resolved device: the option, else OMNI_CUDA_DEVICE, never device 0 instead", () => {
    const cudaPath = stubCuda(3);
    expect(selectBackend('auto', {}, { cudaPath, device: 3 }).backend).toBe('cuda');
    expect(selectBackend('auto', { OMNI_CUDA_DEVICE: '3' }, { cudaPath }).backend).toBe('cuda');
    expect(selectBackend('auto', { OMNI_CUDA_DEVICE: '3' }, { cudaPath, device: 0 }).backend).toBe('fixture');
    expect(selectBackend('auto', {}, { cudaPath }).backend).toBe('fixture');
  });

  it('an explicit cuda preference with no library throws OMNI_ERR_LIBRARY_NOT_FOUND', () => {
    expect(thrownCode(() => selectBackend('cuda', {}, { cudaPath: '/nonexistent/libomni_cuda.so' }))).toBe(
      'OMNI_ERR_LIBRARY_NOT_FOUND',
    );
  });

  it('the fixture accepts the device chosen through OMNI_CUDA_DEVICE', () => {
    const choice = selectBackend('fixture', {});
    const ctx = NativeContext.open(choice.library, { env: { OMNI_CUDA_DEVICE: '2' } });
    expect(ctx.device).toBe(2);
    ctx.close();
  });
});
