/**
 * Where /proc/self/maps cannot be read (not Linux, no /proc), inCode cannot tell whether the ABI
 * names are code: it says so (undefined), and the load goes on as it did before the check.
 */
import { describe, expect, it, vi } from 'vitest';

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  const openSync = ((path: Parameters<typeof real.openSync>[0], ...rest: unknown[]) => {
    if (String(path) === '/proc/self/maps') {
      throw Object.assign(new Error(`ENOENT: no such file or directory, open '${String(path)}'`), {
        code: 'ENOENT',
      });
    }
    return (real.openSync as (...args: unknown[]) => number)(path, ...rest);
  }) as typeof real.openSync;
  return { ...real, openSync, default: { ...real, openSync } };
});

const { inCode } = await import('../src/native/code-addresses.js');
const { loadNativeLibrary } = await import('../src/native/index.js');

describe('/proc/self/maps unreadable', () => {
  it('inCode cannot tell (undefined)', () => {
    expect(inCode([0n])).toBeUndefined();
  });

  it("the package's fixture library loads all the same", () => {
    expect(loadNativeLibrary('fixture').backendName).toBe('fixture');
  });
});
