import type { Logger } from 'pino';
import { ApiKeys, SCOPES } from '../engine/index.js';
import type { Config } from './config.js';
import { openConfiguredStore } from './database.js';

/**
 * `waymark bootstrap-key`: the first admin key of a deployment, written straight to the store
 * (DATABASE_URL), as `waymark migrate` writes the schema: with authentication on, AdminService
 * needs an admin key, so the first one cannot come from it. Migrates first (idempotent), creates
 * an admin key (every namespace, every scope) and prints its secret once on stdout, the only
 * plain line among the JSON log lines (the last; `WAYMARK_LOG_LEVEL=warn` leaves it alone); the
 * log names only its id. Create the real keys with it, then revoke it (docs/security.md).
 */
export async function runBootstrapKey(config: Config, logger: Logger, options: { name: string; write: (line: string) => void }): Promise<number> {
  const opened = await openConfiguredStore(config, logger, { applicationName: 'waymark-bootstrap-key', poolSize: 1 });
  try {
    await opened.admin.migrate();
    const { key, secret } = await new ApiKeys({ store: opened.store }).create({ name: options.name, namespace: null, scopes: [...SCOPES], createdByKeyId: null });
    logger.info({ keyId: key.id, database: opened.source }, `created admin key ${key.id}; its secret is printed once`);
    options.write(`${secret}\n`);
    return 0;
  } finally {
    await opened.close();
  }
}
