import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { runConformanceSuite } from './journal-store.conformance.js';

runConformanceSuite('memory', async (options) => {
  let now = Date.parse('2030-01-01T00:00:00.000Z');
  const store = new MemoryStore({ limits: options?.limits, clock: () => new Date(now) });
  return {
    store,
    advance: async (ms) => {
      now += ms;
    },
    endLeaseSession: (holder) => store.leaseSessionEnd(holder),
    close: () => store.close(),
  };
});
