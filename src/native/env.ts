/**
 * Reading the environment a caller may pass instead of process.env (selectBackend, resolveDevice,
 * NativeContext.open). A hand-made environment is checked like any other option: null or a
 * primitive would throw an uncoded TypeError or read as an empty environment (every default,
 * silently), and a variable that is not a string would throw one at `.trim()`.
 *
 * Throws: InvalidArgumentError for either.
 */
import { describeValue, InvalidArgumentError } from '../errors.js';

export function requireEnv(env: unknown): NodeJS.ProcessEnv {
  if (typeof env !== 'object' || env === null) {
    throw new InvalidArgumentError(`env must be an object like process.env, got ${describeValue(env)}`);
  }
  return env as NodeJS.ProcessEnv;
}

/** The variable's value, or undefined when it is unset. */
export function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value: unknown = env[name];
  if (value === undefined || typeof value === 'string') return value;
  throw new InvalidArgumentError(`${name} must be a string, got ${describeValue(value)}`);
}
