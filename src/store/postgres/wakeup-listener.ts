import { EventEmitter } from 'node:events';
import pg from 'pg';
import { translatePgError } from './pg-errors.js';
import { Reconnector, type ReconnectBackoff } from './reconnector.js';

/** One wake-up subscription, as passed to JournalStore.wakeupSubscribe. */
export interface WakeupSubscriber {
  runId?: string;
  onRun?: (runId: string) => void;
  onDelta?: (runId: string) => void;
  onPending?: () => void;
  onTask?: (namespace: string) => void;
  onResync?: () => void;
}

/** The channels the triggers in 0001_init.sql notify (a run id as payload) and 0016's (a namespace). */
export const RUN_CHANNEL = 'waymark_run';
export const PENDING_CHANNEL = 'waymark_pending';
export const TASK_CHANNEL = 'waymark_task';
/** 0019's: a run's model call deltas grew (a run id as payload). */
export const DELTA_CHANNEL = 'waymark_delta';

export interface WakeupListenerOptions extends ReconnectBackoff {
  client: pg.ClientConfig;
  onError?: (err: unknown, message: string) => void;
}

/**
 * One dedicated LISTEN connection shared by every subscriber of a store. NOTIFY is only a wake-up:
 * notifications sent while this connection is down are lost (reliability.md E6), so after it
 * reconnects and re-LISTENs it calls every subscriber once and they catch up from their own
 * cursors. Emits 'connected' and 'lost' (events tests await: test/store/listener.test.ts).
 */
export class WakeupListener extends EventEmitter<{ connected: []; lost: [Error | undefined] }> {
  private readonly subscribers = new Set<WakeupSubscriber>();
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private everConnected = false;
  private closed = false;
  private readonly reconnects: Reconnector;

  constructor(private readonly options: WakeupListenerOptions) {
    super();
    this.reconnects = new Reconnector({
      backoff: options,
      attempt: () => this.connect(),
      onSuccess: () => this.resync(),
      onFailure: (err) => this.options.onError?.(err, 'wake-up listener reconnect failed; retrying'),
      stopped: () => this.closed,
    });
  }

  /**
   * The first subscription opens the connection and throws StoreUnavailableError if it cannot.
   * Once it has been up, a subscription made while it is reconnecting is registered at once: the
   * reconnect's catch-up call covers whatever it missed.
   */
  async subscribe(subscriber: WakeupSubscriber): Promise<() => Promise<void>> {
    if (this.closed) throw new Error('the store is closed; wake-ups are no longer delivered');
    if (!this.everConnected) await this.connect();
    const own = { ...subscriber };
    this.subscribers.add(own);
    return async () => {
      this.subscribers.delete(own);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.subscribers.clear();
    this.reconnects.cancel();
    await this.connecting?.catch(() => {});
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => {});
  }

  private connect(): Promise<void> {
    this.connecting ??= this.open().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async open(): Promise<void> {
    const client = new pg.Client(this.options.client);
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, undefined));
    client.on('notification', (msg) => this.dispatch(msg.channel, msg.payload ?? ''));
    try {
      await client.connect();
      await client.query(`LISTEN ${RUN_CHANNEL}; LISTEN ${PENDING_CHANNEL}; LISTEN ${TASK_CHANNEL}; LISTEN ${DELTA_CHANNEL}`);
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
      throw translatePgError(err);
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.everConnected = true;
    this.reconnects.connected();
    this.emit('connected');
  }

  private lost(client: pg.Client, err: Error | undefined): void {
    if (this.client !== client) return; // a client that never finished connecting, or one already handled
    this.client = null;
    client.removeAllListeners('notification');
    client.end().catch(() => {});
    if (this.closed) return;
    this.options.onError?.(err, 'wake-up listener connection lost; reconnecting');
    this.emit('lost', err);
    this.reconnects.schedule();
  }

  /** After a reconnect: wake everyone once, since notifications sent meanwhile were lost. */
  private resync(): void {
    for (const s of this.subscribers) {
      if (s.runId !== undefined && s.onRun) this.call(s, () => s.onRun!(s.runId!));
      if (s.runId !== undefined && s.onDelta) this.call(s, () => s.onDelta!(s.runId!));
      if (s.onPending) this.call(s, () => s.onPending!());
      if (s.onResync) this.call(s, () => s.onResync!());
    }
  }

  private dispatch(channel: string, payload: string): void {
    for (const s of this.subscribers) {
      if (channel === RUN_CHANNEL && s.onRun && (s.runId === undefined || s.runId === payload)) {
        this.call(s, () => s.onRun!(payload));
      } else if (channel === DELTA_CHANNEL && s.onDelta && (s.runId === undefined || s.runId === payload)) {
        this.call(s, () => s.onDelta!(payload));
      } else if (channel === PENDING_CHANNEL && s.onPending) {
        this.call(s, () => s.onPending!());
      } else if (channel === TASK_CHANNEL && s.onTask) {
        this.call(s, () => s.onTask!(payload));
      }
    }
  }

  /** A subscriber that throws must not stop the others from being woken. */
  private call(s: WakeupSubscriber, fn: () => void): void {
    if (!this.subscribers.has(s)) return;
    try {
      fn();
    } catch (err) {
      this.options.onError?.(err, 'wake-up subscriber threw');
    }
  }
}
