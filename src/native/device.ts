/**
 * Device selection, explicit and documented: the `device` option wins; otherwise the
 * OMNI_CUDA_DEVICE environment variable (a non-negative decimal integer); 0 only when neither is given.
 *
 * Throws: InvalidArgumentError for a negative, fractional or non-numeric option or variable, or an
 * `env` that is not an object (undefined means process.env; null is a mistake, not "none").
 */
import { describeValue, InvalidArgumentError } from '../errors.js';
import { envValue, requireEnv } from './env.js';

export const DEVICE_ENV = 'OMNI_CUDA_DEVICE';

// Far above any real device count; keeps the value inside the C side's int.
export const MAX_DEVICE = 1023;

/**
 * The CUDA device to use: `option` (an integer 0..1023) when given, else OMNI_CUDA_DEVICE from
 * `env` (default process.env), else 0. Throws OMNI_ERR_INVALID_ARGUMENT for a malformed one.
 */
export function resolveDevice(option: number | undefined, env: NodeJS.ProcessEnv = process.env): number {
  requireEnv(env);
  if (option !== undefined) {
    if (typeof option !== 'number' || !Number.isInteger(option) || option < 0 || option > MAX_DEVICE) {
      throw new InvalidArgumentError(
        `device must be an integer in 0..${MAX_DEVICE}, got ${describeValue(option)}`,
      );
    }
    return option;
  }
  const raw = envValue(env, DEVICE_ENV);
  if (raw === undefined || raw.trim() === '') return 0;
  const text = raw.trim();
  if (!/^\d+$/.test(text) || Number(text) > MAX_DEVICE) {
    throw new InvalidArgumentError(
      `${DEVICE_ENV} must be an integer in 0..${MAX_DEVICE}, got ${JSON.stringify(raw)}`,
    );
  }
  return Number(text);
}
