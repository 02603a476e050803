import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The package root `waymark` (test fixtures import it, as a user's module does) resolves to its
  // sources here, the copy the tests' own imports load, not to the compiled dist/ (package.json).
  resolve: { conditions: ['waymark-source'] },
  ssr: { resolve: { conditions: ['waymark-source'] } },
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
