// scheduling/: this replica's presence in the store for routing: what it serves, kept alive by a heartbeat.
// Must not claim or execute anything: the executor claims with RunDriver.serves(); this only records it.
import type { Logger } from 'pino';
import type { JournalStore, ServedWorkflow } from '../../store/store.js';

/*
 * A replica's presence in the store (docs/recovery.md "Routing"): which workflow definitions it
 * serves, renewed by a heartbeat, so that other replicas route runs to it, StartRun accepts what
 * some live replica serves, and ListWorkflows shows who serves what. It reads nothing and decides
 * nothing; a failed heartbeat is logged and retried at the next tick (the row expires after
 * `ttlMs` without one, and the replica then counts as gone).
 */

export const REPLICA_DEFAULTS = { ttlMs: 15_000 } as const;

export class ReplicaPresence {
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;

  constructor(private readonly options: {
    store: JournalStore; replicaId: string; workflows: ServedWorkflow[]; ttlMs: number; logger: Logger;
  }) {}

  /** Records the replica (awaited: StartRun elsewhere may route to it at once), then renews it every ttl/3. */
  async start(): Promise<void> {
    await this.beat(true);
    this.timer = setInterval(() => void this.beat(false), Math.max(1, Math.floor(this.options.ttlMs / 3)));
    this.timer.unref();
  }

  /** A clean stop: the replica's row goes, so nothing is routed to it any more. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.beating;
    await this.options.store.replicaRemove({ replicaId: this.options.replicaId }).catch((err: unknown) => {
      this.options.logger.warn({ err }, 'removing this replica from the store failed; its row expires by itself');
    });
  }

  private beat(first: boolean): Promise<void> {
    const { store, replicaId, workflows, ttlMs, logger } = this.options;
    this.beating = store.replicaHeartbeat({ replicaId, workflows, ttlMs }).then(
      () => {
        if (first) logger.info({ replicaId, workflows: workflows.map((w) => `${w.name}@${w.digest.slice(0, 12)}`) }, 'replica registered: serving these workflows');
      },
      (err: unknown) => {
        if (first) throw err;
        logger.warn({ err }, 'replica heartbeat failed; retrying at the next interval');
      },
    );
    return this.beating;
  }
}
