import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'clients/ts/test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Database tests each get their own database, so files run in parallel; 2 cores here.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
