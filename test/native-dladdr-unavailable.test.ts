/**
 * Where dladdr1 cannot be bound (musl, which lacks it; no glibc), inData cannot tell: it
 * says so (undefined), and the load goes on by the mappings alone, as it did before that check.
 */
import { describe, expect, it, vi } from 'vitest';

vi.mock('../src/native/koffi.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/native/koffi.js')>();
  const koffi = (): ReturnType<typeof real.koffi> => {
    const ffi = real.koffi();
    const load = ((path: string, ...rest: unknown[]) => {
      if (path === 'libc.so.6' || path === 'libdl.so.2') throw new Error(`cannot load ${path} (mocked)`);
      return (ffi.load as (...args: unknown[]) => ReturnType<typeof ffi.load>)(path, ...rest);
    }) as typeof ffi.load;
    return { ...ffi, load } as ReturnType<typeof real.koffi>;
  };
  return { ...real, koffi };
});

const { inData } = await import('../src/native/data-addresses.js');
const { loadNativeLibrary } = await import('../src/native/index.js');

describe('dladdr1 unavailable', () => {
  it('inData cannot tell (undefined)', () => {
    expect(inData([0n])).toBeUndefined();
  });

  it("the package's fixture library loads all the same", () => {
    expect(loadNativeLibrary('fixture').backendName).toBe('fixture');
  });
});
