import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { ensureDatabase, startEmbeddedPostgres } from './embedded-postgres.js';

export interface DatabaseHandle {
  url: string;
  /** Where the URL came from, for the startup log line (never the URL itself: it may hold a password). */
  source: 'DATABASE_URL' | 'embedded';
  /** Stops the embedded server when this process started it; a no-op otherwise. */
  close(): Promise<void>;
}

const EMBEDDED_DATABASE = 'waymark';

/** DATABASE_URL when set; otherwise an embedded PostgreSQL whose data lives under WAYMARK_DATA_DIR/pg. */
export async function openDatabase(config: Config, logger: Logger): Promise<DatabaseHandle> {
  if (config.databaseUrl) return { url: config.databaseUrl, source: 'DATABASE_URL', close: async () => {} };
  const dataDir = path.resolve(config.dataDir, 'pg');
  logger.info({ dataDir }, 'starting embedded PostgreSQL');
  const pg = await startEmbeddedPostgres({
    dataDir,
    port: 0,
    persistent: true,
    onLog: (line) => logger.debug({ postgres: line }),
  });
  if (!pg.owned) logger.info({ dataDir }, 'reusing the embedded PostgreSQL another waymark process started');
  await ensureDatabase(pg.url, EMBEDDED_DATABASE);
  return { url: pg.urlFor(EMBEDDED_DATABASE), source: 'embedded', close: () => pg.stop() };
}
