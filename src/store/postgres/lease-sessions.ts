import pg from 'pg';
import { translatePgError } from './pg-errors.js';
import { Reconnector, type ReconnectBackoff } from './reconnector.js';

/*
 * Lease sessions (migration 0014, docs/recovery.md "Dead sessions"): each lease holder keeps one
 * dedicated connection holding a session advisory lock, and registers the lock's key in
 * `lease_sessions`. When the holder's process dies, the kernel closes its sockets, PostgreSQL ends
 * the session and the lock with it; the sweeper sees a registered key whose lock nobody holds and
 * reclaims the holder's RUNNING runs at once instead of waiting for their leases to expire.
 *
 * The lock only says "this holder's session is gone". It is not the fence: the reclaim bumps each
 * run's lease_epoch like any recovery, so a holder that is alive but lost this connection has its
 * writes refused (LeaseLostError) and loses its runs, which is safe. A stalled (SIGSTOP) holder and
 * a machine that vanished without closing its sockets keep their sessions open: their leases
 * expire as before, and the sweeper recovers them within lease + sweep.
 */

/** The advisory lock's first key ('WYMK'); the second is the row's lock_key. */
export const LEASE_SESSION_LOCK_CLASS = 1465470283;

/**
 * Registered sessions whose lock is no longer held: their holders' sessions ended. Only sessions
 * opened since PostgreSQL last started: a restart ends every session at once while their holders
 * live on and register again, so what it ended is left to lease expiry (test/chaos/postgres-restart.test.ts
 * failed 7 of 40 runs as Interrupted without this: reclaimed again and again while their holders reconnected).
 */
export const DEAD_LEASE_SESSIONS = `SELECT s.holder, s.lock_key FROM lease_sessions s
  WHERE s.opened_at >= pg_postmaster_start_time() AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid = ${LEASE_SESSION_LOCK_CLASS}::oid AND l.objid = s.lock_key::oid)`;

/** Registrations left by a restart whose holders hold no RUNNING run: nothing to reclaim, nobody to fence. */
export const STALE_LEASE_SESSIONS_DELETE = `DELETE FROM lease_sessions s WHERE s.opened_at < pg_postmaster_start_time()
  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.lease_holder = s.holder AND r.status = 'RUNNING')`;

export interface LeaseSessionOptions extends ReconnectBackoff {
  client: pg.ClientConfig;
  onError?: (err: unknown, message: string) => void;
}

/**
 * The session of one holder. open() resolves once the lock is held and the key registered; if the
 * connection is lost later it reconnects and registers a new key (the runs reclaimed meanwhile are
 * the price of the lost connection, never a second owner). close() removes the row first, so the
 * holder's remaining leases go back to expiring, then ends the session.
 */
export class LeaseSession {
  private client: pg.Client | null = null;
  private opening: Promise<void> | null = null;
  private closed = false;
  private readonly reconnects: Reconnector;

  constructor(readonly holder: string, private readonly options: LeaseSessionOptions) {
    this.reconnects = new Reconnector({
      backoff: options,
      attempt: () => this.open(),
      onFailure: (err) => this.options.onError?.(err, 'lease session reconnect failed; retrying'),
      stopped: () => this.closed,
    });
  }

  /** The backend pid of the session, while connected (tests end it with pg_terminate_backend). */
  pid: number | null = null;

  open(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.opening ??= this.connect().finally(() => {
      this.opening = null;
    });
    return this.opening;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.reconnects.cancel();
    await this.opening?.catch(() => {});
    const client = this.client;
    this.client = null;
    this.pid = null;
    if (!client) return;
    try {
      await client.query({ name: 'lease_sessions_remove', text: 'DELETE FROM lease_sessions WHERE holder = $1', values: [this.holder] });
    } catch {
      // The session is going anyway; a row left behind is dead and the sweeper deletes it.
    }
    await client.end().catch(() => {});
  }

  /**
   * Ends the session as a killed process would: no DELETE, no reconnect; the row stays behind,
   * dead, and resolves once PostgreSQL has released the lock (tests of the reclaim).
   */
  async abandon(): Promise<void> {
    this.closed = true;
    this.reconnects.cancel();
    await this.opening?.catch(() => {});
    const client = this.client;
    this.client = null;
    this.pid = null;
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(this.options.client);
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, undefined));
    try {
      await client.connect();
      // An idle_session_timeout set by an operator would end this session, and the holder's runs with it.
      await client.query('SET idle_session_timeout = 0');
      const { rows } = await client.query<{ key: number; pid: number }>({
        name: 'lease_sessions_key', text: `SELECT nextval('lease_session_keys')::integer AS key, pg_backend_pid() AS pid`,
      });
      const { key, pid } = rows[0]!;
      await client.query({ name: 'lease_sessions_lock', text: `SELECT pg_advisory_lock(${LEASE_SESSION_LOCK_CLASS}, $1)`, values: [key] });
      // Written after the lock is held, on the same session: a visible row always had its lock taken.
      await client.query({
        name: 'lease_sessions_register',
        text: `INSERT INTO lease_sessions (holder, lock_key, opened_at) VALUES ($1, $2, clock_timestamp())
          ON CONFLICT (holder) DO UPDATE SET lock_key = EXCLUDED.lock_key, opened_at = EXCLUDED.opened_at`,
        values: [this.holder, key],
      });
      if (this.closed) throw new Error('closed');
      this.client = client;
      this.pid = pid;
      this.reconnects.connected();
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
      if (this.closed) return;
      throw translatePgError(err);
    }
  }

  private lost(client: pg.Client, err: Error | undefined): void {
    if (this.client !== client) return;
    this.client = null;
    this.pid = null;
    client.end().catch(() => {});
    if (this.closed) return;
    this.options.onError?.(err, 'lease session connection lost; reconnecting (runs it held may be reclaimed meanwhile)');
    this.reconnects.schedule();
  }
}

/**
 * The lease sessions one store holds, by holder (JournalStore leaseSessionOpen/Close): one
 * LeaseSession each, reopened on its own after a lost connection, all closed with the store.
 */
export class LeaseSessions {
  private readonly sessions = new Map<string, LeaseSession>();

  constructor(private readonly options: Omit<LeaseSessionOptions, 'onError'> & { onError?: (err: unknown, message: string, holder: string) => void }) {}

  async open(holder: string): Promise<void> {
    let session = this.sessions.get(holder);
    if (!session) {
      session = new LeaseSession(holder, { ...this.options, onError: (err, message) => this.options.onError?.(err, message, holder) });
      this.sessions.set(holder, session);
    }
    try {
      await session.open();
    } catch (err) {
      this.sessions.delete(holder);
      await session.close();
      throw err;
    }
  }

  async close(holder: string): Promise<void> {
    const session = this.sessions.get(holder);
    this.sessions.delete(holder);
    await session?.close();
  }

  /** The backend pid of `holder`'s session (tests end it with pg_terminate_backend). */
  pid(holder: string): number | null {
    return this.sessions.get(holder)?.pid ?? null;
  }

  /** Tests: `holder`'s session ends as a killed process's would (its registration stays, dead). */
  async end(holder: string): Promise<void> {
    const session = this.sessions.get(holder);
    this.sessions.delete(holder);
    await session?.abandon();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((session) => session.close()));
    this.sessions.clear();
  }
}
