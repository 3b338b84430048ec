import { clearLongTimeout, type LongTimer, setLongTimeout } from '../long-timeout.js';

/**
 * `promise`'s value, or undefined once `ms` has passed first; the timer goes either way. A
 * promise left behind may still reject later: the race has handled it.
 */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: LongTimer | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setLongTimeout(resolve, ms, undefined);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    if (timer !== undefined) clearLongTimeout(timer);
  }
}
