import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Worker threads, native calls and stress tests share 2 cores: give slow machines room.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // test/admission-leak.test.ts forces collection with global.gc() to check the leak safety net.
    execArgv: ['--expose-gc'],
  },
});
