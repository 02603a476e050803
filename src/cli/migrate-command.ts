import type { Logger } from 'pino';
import type { Config } from './config.js';
import { openConfiguredStore } from './database.js';

/** `waymark migrate`: applies pending migrations under the migration lock, then exits. */
export async function runMigrate(config: Config, logger: Logger): Promise<number> {
  const opened = await openConfiguredStore(config, logger, { applicationName: 'waymark-migrate', poolSize: 1 });
  try {
    const { applied } = await opened.admin.migrate();
    logger.info({ applied, database: opened.source }, applied.length ? 'migrations applied' : 'schema already up to date');
    return 0;
  } finally {
    await opened.close();
  }
}
