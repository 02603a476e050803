import type { StoreKind } from '../store-kind.js';
import { PostgresAdmin } from './postgres-admin.js';
import { PostgresStore } from './postgres-store.js';

/** `postgres://` and `postgresql://` URLs: the production store (docs/store.md). */
export const postgresKind: StoreKind = {
  name: 'postgres',
  schemes: ['postgres:', 'postgresql:'],
  expects: 'a postgres:// URL',
  async open(options) {
    const { url, limits, applicationName, poolSize, appendsInFlight, logger } = options;
    const store = await PostgresStore.connect({ url, limits, applicationName, poolSize, appendsInFlight, logger });
    const admin = new PostgresAdmin({ url, applicationName, logger }, () => store.close());
    return { kind: 'postgres', store, admin };
  },
};
