/**
 * Device selection, explicit and documented: the `device` option wins; otherwise the
 * OMNI_CUDA_DEVICE environment variable (a whole number 0..1023 in decimal notation, read as the
 * CLI's --device reads it: '1e0' and '+1' are 1); 0 only when neither is given.
 *
 * Throws: InvalidArgumentError for a negative, fractional, non-numeric or over-1023 option or
 * variable, or an `env` that is not an object (undefined means process.env; null is a mistake,
 * not "none").
 */
import { decimalValue, isWholeDecimal } from '../decimal.js';
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
  // Read as --device reads the same number (decimal.ts): '1e0', '+1' and '1.0' are device 1
  // there, and were refused here (digits only); '-0' is 0.
  const value = isWholeDecimal(raw) ? decimalValue(raw) : undefined;
  if (value === undefined || value < 0 || value > MAX_DEVICE) {
    throw new InvalidArgumentError(
      `${DEVICE_ENV} must be an integer in 0..${MAX_DEVICE}, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}
