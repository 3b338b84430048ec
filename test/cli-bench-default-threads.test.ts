/**
 * README, Benchmarks: bench's "`--threads` is one per core, at most 4". The default is read from
 * node:os once, when the module loads, so each case loads it afresh over a machine of its size.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

async function defaultThreads(cores: number): Promise<{ threads: number; help: string }> {
  vi.resetModules();
  vi.doMock('node:os', async (original) => ({
    ...(await original<typeof import('node:os')>()),
    availableParallelism: () => cores,
  }));
  const { BENCH_HELP, parseBenchArgs } = await import('../src/cli/bench-options.js');
  const config = parseBenchArgs([], {});
  if (config === 'help') throw new Error('unexpected help');
  return { threads: config.threads, help: BENCH_HELP };
}

afterEach(() => {
  vi.doUnmock('node:os');
  vi.resetModules();
});

describe('bench --threads default: one per core, at most 4', () => {
  it.each([
    [1, 1],
    [3, 3],
    [4, 4],
    [5, 4],
    [64, 4],
  ])('%i cores: %i threads, and --help says so', async (cores, expected) => {
    const { threads, help } = await defaultThreads(cores);
    expect(threads).toBe(expected);
    expect(help).toContain(`worker threads per runtime (default ${expected})`);
  });
});
