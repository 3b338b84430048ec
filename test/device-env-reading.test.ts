/**
 * OMNI_CUDA_DEVICE and --device name one quantity, the CUDA device, and read it one way (the
 * --device default is the variable): the variable took digits alone, so `OMNI_CUDA_DEVICE=1e0`
 * was refused where `--device 1e0` is device 1.
 */
import { describe, expect, it } from 'vitest';
import { parseServeArgs } from '../src/cli/serve-command.js';
import { resolveDevice } from '../src/native/device.js';
import { thrownCode } from './fixtures/thrown.js';

const TEXTS = [
  ...['0', '3', ' 2 ', '03', '+1', '1e0', '1.0', '2.50e1', '-0', '1023', '1024', '-1', '1.5'],
  ...['0x1', '1_0', 'abc', '1e-400', '-1e-400', '1e400', 'Infinity', 'NaN', '1 2'],
];

function fromFlag(text: string): number | string | undefined {
  try {
    const config = parseServeArgs(['--device', text], {});
    return config === 'help' ? 'help' : config.device;
  } catch (err) {
    return (err as { code?: string }).code;
  }
}

function fromEnv(text: string): number | string | undefined {
  try {
    return resolveDevice(undefined, { OMNI_CUDA_DEVICE: text });
  } catch (err) {
    return (err as { code?: string }).code;
  }
}

describe('OMNI_CUDA_DEVICE reads a number as --device does', () => {
  it('1e0, +1, 1.0 and -0 are devices 1, 1, 1 and 0', () => {
    expect(['1e0', '+1', '1.0', '-0'].map(fromEnv)).toEqual([1, 1, 1, 0]);
    expect(thrownCode(() => resolveDevice(undefined, { OMNI_CUDA_DEVICE: '1.5' }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
  });

  it.each(TEXTS)('%j: the same device from both, or refused by both', (text) => {
    const flag = fromFlag(text);
    const env = fromEnv(text);
    if (typeof flag === 'number') expect(env).toBe(flag);
    else {
      expect(flag).toBe('OMNI_ERR_USAGE');
      expect(env).toBe('OMNI_ERR_INVALID_ARGUMENT');
    }
  });
});
