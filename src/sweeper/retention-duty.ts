import type { Logger } from 'pino';
import { SweeperLeaseLostError } from '../journal/errors.js';
import type { JournalStore } from '../store/store.js';

/*
 * The sweeper's retention duty (docs/operations.md "Retention"): finished run trees older than
 * their namespace's horizon are deleted in small batches, each one transaction that skips what
 * another holds (store/retention-params.ts runPurge). Parked, pending and running runs are never
 * touched. A namespace with a horizon of its own is purged in calls of its own, the rest with the
 * default horizon in calls that leave those namespaces out.
 */

export interface RetentionPolicy {
  /** Finished runs are purged this long after they ended; 0 keeps them forever. */
  defaultMs: number;
  /** Horizons of namespaces that differ from the default (0: keep forever). */
  namespaces: Record<string, number>;
  /** Root runs per batch (each with its descendants): small, so each transaction is short. */
  batchSize: number;
}

export const RETENTION_DEFAULTS: RetentionPolicy = { defaultMs: 30 * 86_400_000, namespaces: {}, batchSize: 50 };

/** `policy`, or a RangeError naming what is wrong with it. */
export function checkedRetention(policy: RetentionPolicy): RetentionPolicy {
  const horizons = [policy.defaultMs, ...Object.values(policy.namespaces)];
  if (!horizons.every((ms) => Number.isInteger(ms) && ms >= 0)) throw new RangeError('retention horizons must be whole numbers of milliseconds >= 0');
  if (!Number.isInteger(policy.batchSize) || policy.batchSize < 1) throw new RangeError(`retention.batchSize must be a whole number >= 1, got ${policy.batchSize}`);
  return policy;
}

/** What one sweep's retention did. */
export interface RetentionReport {
  /** Runs deleted (roots and descendants). */
  purged: number;
  /** Their journal entries. */
  entries: number;
}

/**
 * Runs the duty once: for each horizon, batches while full ones come back, at most `maxBatches`.
 * A batch that fails (a lock timeout, the database away) ends the duty for this sweep with a
 * warning, the next sweep retries; a lost leadership is rethrown for the sweep to handle.
 */
export async function purgeExpired(
  store: JournalStore, policy: RetentionPolicy, maxBatches: number, logger: Logger,
): Promise<RetentionReport> {
  const report: RetentionReport = { purged: 0, entries: 0 };
  const overridden = Object.keys(policy.namespaces);
  const passes = [
    ...Object.entries(policy.namespaces).filter(([, ms]) => ms > 0).map(([namespace, ms]) => ({ olderThanMs: ms, namespace })),
    ...(policy.defaultMs > 0 ? [{ olderThanMs: policy.defaultMs, exceptNamespaces: overridden }] : []),
  ];
  try {
    for (const pass of passes) {
      for (let i = 0; i < maxBatches; i++) {
        const r = await store.runPurge({ ...pass, limit: policy.batchSize });
        report.purged += r.runIds.length;
        report.entries += r.entries;
        if (r.roots.length < policy.batchSize) break;
      }
    }
  } catch (error) {
    if (error instanceof SweeperLeaseLostError) throw error;
    logger.warn({ err: error, purged: report.purged }, 'retention batch failed; retrying at the next sweep');
  }
  return report;
}
