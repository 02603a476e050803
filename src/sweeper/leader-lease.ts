import { EventEmitter } from 'node:events';
import { pino, type Logger } from 'pino';
import { SweeperLeaseLostError } from '../journal/errors.js';
import type { JournalStore, SweeperLease } from '../store/store.js';

/*
 * Leadership among a store's sweepers: a lease row in the database with a fencing epoch
 * (store.sweeperLease*), never an advisory lock, which carries no token and vanishes silently with
 * its connection (reliability.md §2.5). Holding the lease is what lets a sweeper act; the epoch it
 * carries into every write is what makes a paused ex-leader harmless.
 */

export interface LeaderLeaseOptions {
  store: JournalStore;
  /** Unique per sweeper process (host:pid). */
  holder: string;
  ttlMs: number;
  /** Renewal period. Default a third of ttlMs. */
  renewEveryMs?: number;
  /**
   * Period of acquisition attempts while following. Default the renewal period, at most 1 s: a
   * dead leader's session ends within moments of its process, and its successor should notice.
   */
  followEveryMs?: number;
  logger?: Logger;
}

export interface LeaderLeaseEvents {
  acquired: [SweeperLease];
  /** Another sweeper took over (or the lease was released behind our back). */
  lost: [{ lease: SweeperLease }];
  released: [SweeperLease];
}

export class LeaderLease {
  readonly events = new EventEmitter<LeaderLeaseEvents>();
  readonly holder: string;
  readonly ttlMs: number;
  readonly renewEveryMs: number;
  readonly followEveryMs: number;
  private readonly store: JournalStore;
  private readonly logger: Logger;
  private lease: SweeperLease | null = null;
  private timer: NodeJS.Timeout | null = null;
  private busy: Promise<unknown> = Promise.resolve();
  private stopped = false;
  /** The lease session of this holder (store.leaseSessionOpen), opened before the first attempt. */
  private session: Promise<boolean> | null = null;
  /** Whether "waiting for the leader" was logged since this sweeper last led or tried. */
  private waitLogged = false;

  constructor(options: LeaderLeaseOptions) {
    if (!(options.ttlMs > 0)) throw new RangeError(`ttlMs must be > 0, got ${options.ttlMs}`);
    const renewEveryMs = options.renewEveryMs ?? Math.max(1, Math.floor(options.ttlMs / 3));
    if (!(renewEveryMs > 0 && renewEveryMs < options.ttlMs)) throw new RangeError(`renewEveryMs must be > 0 and < ttlMs, got ${renewEveryMs}`);
    this.store = options.store;
    this.holder = options.holder;
    this.ttlMs = options.ttlMs;
    this.renewEveryMs = renewEveryMs;
    this.followEveryMs = options.followEveryMs ?? Math.min(renewEveryMs, 1_000);
    this.logger = options.logger ?? pino({ enabled: false });
  }

  /** The lease while this process believes it leads; the store's fence has the last word. */
  get current(): SweeperLease | null {
    return this.lease;
  }

  /** Starts the renew/acquire timer. */
  start(): void {
    if (this.timer || this.stopped) return;
    const tick = (): void => {
      this.timer = setTimeout(() => {
        this.busy = (this.lease ? this.renew() : this.tryAcquire()).catch(() => undefined).finally(() => {
          if (!this.stopped) tick();
        });
      }, this.lease ? this.renewEveryMs : this.followEveryMs);
      this.timer.unref();
    };
    tick();
  }

  /** Returns the held lease, or tries to take it (null when another sweeper leads). */
  async tryAcquire(): Promise<SweeperLease | null> {
    if (this.lease || this.stopped) return this.lease;
    try {
      await this.openSession();
      const lease = await this.store.sweeperLeaseAcquire({ holder: this.holder, ttlMs: this.ttlMs });
      if (lease && !this.stopped) {
        this.lease = lease;
        this.waitLogged = false;
        this.logger.info({ holder: this.holder, epoch: lease.epoch }, 'sweeper leader lease acquired');
        this.events.emit('acquired', lease);
      } else if (lease) {
        await this.store.sweeperLeaseRelease({ lease });
      } else if (!this.waitLogged) {
        // Said once per wait: a standby that polls silently looks like a process doing nothing.
        this.waitLogged = true;
        this.logger.info({ holder: this.holder, ttlMs: this.ttlMs },
          'another sweeper holds the leader lease; waiting to take over when it is released, when it expires, or as soon as that process\'s database session ends');
      }
      return this.lease;
    } catch (err) {
      this.logger.warn({ err }, 'could not try the sweeper leader lease; retrying');
      return null;
    }
  }

  /**
   * A lease session for this holder (store/postgres/lease-sessions.ts), so that when this process
   * dies its successor takes the leader lease at once rather than at its expiry. A store that
   * cannot open one now is retried at the next attempt; leading does not wait for it.
   */
  private async openSession(): Promise<void> {
    this.session ??= this.store.leaseSessionOpen({ holder: this.holder }).then(() => true, (err: unknown) => {
      this.session = null;
      this.logger.warn({ err }, 'could not open the sweeper\'s lease session; its successor would wait for the leader lease to expire');
      return false;
    });
    await this.session;
  }

  /** Called when a fenced write was refused: another sweeper leads now. */
  markLost(lease: SweeperLease): void {
    if (!this.lease || this.lease.epoch !== lease.epoch) return;
    this.lease = null;
    this.logger.warn({ holder: this.holder, epoch: lease.epoch }, 'sweeper leader lease lost; following');
    this.events.emit('lost', { lease });
  }

  /** Stops renewing and releases the lease, so another sweeper takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.busy;
    const lease = this.lease;
    this.lease = null;
    if (lease) {
      try {
        await this.store.sweeperLeaseRelease({ lease });
        this.events.emit('released', lease);
      } catch (err) {
        this.logger.warn({ err }, 'could not release the sweeper leader lease; it expires on its own');
      }
    }
    if (await this.session) await this.store.leaseSessionClose({ holder: this.holder }).catch(() => undefined);
  }

  private async renew(): Promise<void> {
    const lease = this.lease;
    if (!lease) return;
    try {
      const renewed = await this.store.sweeperLeaseRenew({ lease, ttlMs: this.ttlMs });
      if (this.lease?.epoch === renewed.epoch) this.lease = renewed;
    } catch (err) {
      if (err instanceof SweeperLeaseLostError) this.markLost(lease);
      // A database outage: keep the lease; if another sweeper takes over meanwhile, our writes are fenced.
      else this.logger.warn({ err }, 'renewing the sweeper leader lease failed; retrying');
    }
  }
}
