import type { StoreAdmin, StoreKind } from '../store-kind.js';
import { MemoryStore } from './memory-store.js';

/**
 * `memory:`: a fresh MemoryStore per open, held by this process alone and gone when it exits.
 * For tests and for trying Waymark out with `waymark dev`; a separate `waymark sweeper` or a
 * second replica cannot see it. It has no schema, so there is nothing to migrate.
 */
export const memoryKind: StoreKind = {
  name: 'memory',
  schemes: ['memory:'],
  expects: 'memory: (a store held in this process)',
  async open(options) {
    const store = new MemoryStore({ limits: options.limits });
    const admin: StoreAdmin = {
      migrate: async () => ({ applied: [] }),
      ping: async () => {},
      schemaStatus: async () => ({ ok: true, applied: [], pending: [], unknown: [] }),
      close: () => store.close(),
    };
    return { kind: 'memory', store, admin };
  },
};
