/**
 * A real AbortSignal. `instanceof` alone admits `Object.create(AbortSignal.prototype)`, whose
 * getters throw (ERR_INVALID_THIS): a later read of `aborted` would then throw where the
 * caller was promised a coded rejection.
 */
export function isAbortSignal(value: unknown): value is AbortSignal {
  if (!(value instanceof AbortSignal)) return false;
  try {
    return typeof value.aborted === 'boolean';
  } catch {
    return false;
  }
}
