import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/cli/embedded-postgres.js';

/*
 * A throwaway (persistent: false) PostgreSQL, as the tests and `npm run bench` start, must leave
 * nothing behind. As root, a data directory under a private folder is kept under
 * /var/lib/waymark/<key>/ instead (the log says where): that key folder must go too.
 */
describe('a throwaway embedded PostgreSQL', () => {
  it('removes its data directory on stop, wherever it was kept', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'waymark-throwaway-'));
    const logs: string[] = [];
    try {
      const handle = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: 0, persistent: false, onLog: (line) => logs.push(line) });
      const moved = logs.map((line) => / in (\/var\/lib\/waymark\/\S+)$/.exec(line)?.[1]).find((p) => p !== undefined);
      const dataDir = moved ?? path.join(dir, 'pg');
      expect(existsSync(path.join(dataDir, 'PG_VERSION'))).toBe(true);
      await handle.stop();
      expect(existsSync(dataDir)).toBe(false);
      if (moved) expect(existsSync(path.dirname(moved))).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
