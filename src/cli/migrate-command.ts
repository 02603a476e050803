import pg from 'pg';
import type { Logger } from 'pino';
import { migrate } from '../store/postgres/migrate.js';
import type { Config } from './config.js';
import { openDatabase } from './database.js';

/** `waymark migrate`: applies pending migrations under the migration lock, then exits. */
export async function runMigrate(config: Config, logger: Logger): Promise<number> {
  const db = await openDatabase(config, logger);
  const pool = new pg.Pool({ connectionString: db.url, max: 1, connectionTimeoutMillis: 10_000 });
  try {
    const { applied } = await migrate({ pool });
    logger.info({ applied, database: db.source }, applied.length ? 'migrations applied' : 'schema already up to date');
    return 0;
  } finally {
    await pool.end();
    await db.close();
  }
}
