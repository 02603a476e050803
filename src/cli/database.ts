import path from 'node:path';
import type { Logger } from 'pino';
import { openStore } from '../store/open-store.js';
import type { OpenedStore } from '../store/store-kind.js';
import type { Config } from './config.js';
import { ensureDatabase, startEmbeddedPostgres } from './embedded-postgres.js';

export interface ConfiguredStore extends OpenedStore {
  /** Where the URL came from, for the startup log line (never the URL itself: it may hold a password). */
  source: 'DATABASE_URL' | 'embedded';
  /** Closes the store and its admin side, then stops the embedded server when this process started it. */
  close(): Promise<void>;
}

const EMBEDDED_DATABASE = 'waymark';

/**
 * The store the settings name: DATABASE_URL when set (its scheme picks the kind, store/open-store.ts),
 * otherwise an embedded PostgreSQL whose data lives under WAYMARK_DATA_DIR/pg. Opened, not migrated.
 */
export async function openConfiguredStore(
  config: Config, logger: Logger, options: { applicationName: string; poolSize?: number },
): Promise<ConfiguredStore> {
  const db = await resolveUrl(config, logger);
  try {
    const opened = await openStore({
      url: db.url, limits: config.limits, appendsInFlight: config.appendsInFlight, logger, ...options,
    });
    if (opened.kind === 'memory') logger.warn('the memory store keeps runs in this process only: they are gone when it exits');
    return {
      ...opened,
      source: db.source,
      close: async () => {
        try {
          await opened.admin.close();
        } finally {
          await db.close();
        }
      },
    };
  } catch (err) {
    await db.close();
    throw err;
  }
}

interface ResolvedUrl {
  url: string;
  source: ConfiguredStore['source'];
  close(): Promise<void>;
}

async function resolveUrl(config: Config, logger: Logger): Promise<ResolvedUrl> {
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
  try {
    await ensureDatabase(pg.url, EMBEDDED_DATABASE);
  } catch (err) {
    // Started (or adopted) for nothing: stop it, or it outlives this process for good.
    await pg.stop().catch((stopErr: unknown) => logger.warn({ err: stopErr }, 'stopping the embedded PostgreSQL failed'));
    throw err;
  }
  return { url: pg.urlFor(EMBEDDED_DATABASE), source: 'embedded', close: () => pg.stop() };
}
