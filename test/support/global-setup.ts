import { execFileSync } from 'node:child_process';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/cli/embedded-postgres.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Admin URL of the Postgres every test file creates its own database on. */
    databaseUrl: string;
  }
}

/**
 * The build of dist/ (see below), then one Postgres for the whole run: DATABASE_URL when set, otherwise an embedded server started here
 * and stopped at the end. Each test file creates its own database on it (see database.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The tests that spawn `waymark` (bin/waymark.js) run the compiled dist/, as a user's install
  // does: built here from the sources as they are now, in about a second (scripts/build.js).
  execFileSync(process.execPath, ['scripts/build.js'], { stdio: 'inherit' });
  const external = process.env.DATABASE_URL;
  if (external) {
    project.provide('databaseUrl', external);
    return async () => {};
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'waymark-test-pg-'));
  let handle: EmbeddedPostgresHandle | undefined;
  try {
    handle = await startEmbeddedPostgres({ dataDir: dir, port: 0, persistent: false });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  project.provide('databaseUrl', handle.url);
  return async () => {
    await handle?.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
