import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Worker threads, native calls and stress tests share 2 cores: give slow machines room.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // vitest's default is one fork fewer than the cores: on 2 cores, one fork ran every file in
    // turn, and the second core idled whenever a file's threads and child processes left it so
    // (each file's fork starts and imports on one thread). Files are isolated processes that
    // read dist/ and native/build and write only to temporary folders of their own.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // test/admission-leak.test.ts forces collection with global.gc() to check the leak safety net.
    execArgv: ['--expose-gc'],
  },
});
