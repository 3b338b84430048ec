import { beforeAll, describe, expect, it } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import { NativeContext, resolveDevice, selectBackend } from '../src/native/index.js';
import { thrownCode } from './fixtures/thrown.js';

describe('backend selection and device resolution', () => {
  beforeAll(() => {
    buildFixture();
  });

  it('resolveDevice: the option wins, then OMNI_CUDA_DEVICE, then 0', () => {
    expect(resolveDevice(undefined, {})).toBe(0);
    expect(resolveDevice(undefined, { OMNI_CUDA_DEVICE: '' })).toBe(0);
    expect(resolveDevice(undefined, { OMNI_CUDA_DEVICE: '3' })).toBe(3);
    expect(resolveDevice(undefined, { OMNI_CUDA_DEVICE: ' 2 ' })).toBe(2);
    expect(resolveDevice(1, { OMNI_CUDA_DEVICE: '3' })).toBe(1);
  });

  it.each([
    ['OMNI_CUDA_DEVICE=abc', () => resolveDevice(undefined, { OMNI_CUDA_DEVICE: 'abc' })],
    ['OMNI_CUDA_DEVICE=-1', () => resolveDevice(undefined, { OMNI_CUDA_DEVICE: '-1' })],
    ['OMNI_CUDA_DEVICE=1.5', () => resolveDevice(undefined, { OMNI_CUDA_DEVICE: '1.5' })],
    ['OMNI_CUDA_DEVICE=0x1', () => resolveDevice(undefined, { OMNI_CUDA_DEVICE: '0x1' })],
    ['device NaN', () => resolveDevice(Number.NaN, {})],
    ['device 0.5', () => resolveDevice(0.5, {})],
    ['OMNI_BACKEND=tpu', () => selectBackend(undefined, { OMNI_BACKEND: 'tpu' })],
    ['backend "gpu"', () => selectBackend('gpu' as 'cuda', {})],
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
