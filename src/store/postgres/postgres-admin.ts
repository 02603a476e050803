import pg from 'pg';
import type { SchemaStatus, StoreAdmin, StoreLogger } from '../store-kind.js';
import { migrate, schemaVersionCheck } from './migrate.js';
import { translatePgError } from './pg-errors.js';

export interface PostgresAdminOptions {
  url: string;
  applicationName?: string;
  logger?: StoreLogger;
  /** Where the migration files live (tests); defaults to the ones this build ships. */
  migrationsDir?: string;
  /** Waiting longer than this for the admin connection is StoreUnavailableError. Default 5000. */
  connectionTimeoutMs?: number;
}

/**
 * The Postgres store's admin side on a one-connection pool of its own: migrations hold their
 * advisory lock on it, and readiness pings on it, so a saturated store pool cannot make readiness
 * flap. No statement_timeout: a migration may take longer than a store call may.
 */
export class PostgresAdmin implements StoreAdmin {
  private readonly pool: pg.Pool;
  private readonly dir: { dir?: string };
  private closing: Promise<void> | null = null;

  constructor(options: PostgresAdminOptions, private readonly onClose: () => Promise<void> = async () => {}) {
    this.pool = new pg.Pool({
      connectionString: options.url,
      max: 1,
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 5_000,
      application_name: `${options.applicationName ?? 'waymark'}:admin`,
    });
    // An idle client's backend can die at any time; without a listener the process would crash.
    this.pool.on('error', (err) => options.logger?.warn({ err }, 'idle admin connection failed; the pool replaces it'));
    this.dir = options.migrationsDir ? { dir: options.migrationsDir } : {};
  }

  migrate(): Promise<{ applied: string[] }> {
    return migrate({ pool: this.pool, ...this.dir });
  }

  async ping(): Promise<void> {
    try {
      await this.pool.query({ name: 'admin_ping', text: 'SELECT 1' });
    } catch (err) {
      throw translatePgError(err);
    }
  }

  schemaStatus(): Promise<SchemaStatus> {
    return schemaVersionCheck({ pool: this.pool, ...this.dir });
  }

  close(): Promise<void> {
    this.closing ??= Promise.allSettled([this.pool.end(), this.onClose()]).then((results) => {
      const failed = results.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    });
    return this.closing;
  }
}
