import type { JournalStore, SweeperLease } from '../store/store.js';

/** The store methods a sweeper writes through; each accepts a `leader` lease as its fence. */
const FENCED = new Set<string | symbol>(['runRecoverExpired', 'runRecoverDeadSessions', 'runStatusForce', 'journalResolve', 'runPurge', 'scheduleUpdate', 'scheduleFire']);

/**
 * A view of `store` whose sweeper writes carry `lease`, so code written against the plain store
 * (the engine's resolutions: deadlines, child outcomes) is fenced by the leader epoch without
 * knowing about it. A Proxy rather than a class so methods added to JournalStore pass through.
 */
export function leaderFencedStore(store: JournalStore, lease: SweeperLease): JournalStore {
  return new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      const method = value as (params: object) => unknown;
      if (FENCED.has(key)) return (params: object) => method.call(target, { ...params, leader: lease });
      return method.bind(target);
    },
  });
}
