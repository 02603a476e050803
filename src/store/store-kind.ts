import type { Limits } from '../journal/limits.js';
import type { JournalStore } from './store.js';

/*
 * The seam for opening a store: what a store kind (a folder under src/store/) hands the
 * composition root. `open-store.ts` picks the kind from the URL's scheme; nothing outside
 * src/store/ knows which kind it got.
 */

/** The subset of a pino logger a store uses. */
export interface StoreLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** StoreOptions' defaults, where a setting has one that the configuration shows. */
export const STORE_DEFAULTS = {
  /** Measured on 2 cores (docs/performance.md); more suits a database with many cores. */
  appendsInFlight: 2,
} as const;

/** The settings every kind is opened with; a kind ignores the ones it has no use for. */
export interface StoreOptions {
  /** Where the store lives; its scheme picks the kind (`postgres://…`, `memory:`). */
  url: string;
  limits?: Partial<Limits>;
  /** Names this process's connections, as the database shows them (`waymark-server`). */
  applicationName?: string;
  /** Connections for store calls (the main pool). */
  poolSize?: number;
  /** Journal appends running at once; those arriving meanwhile are group committed (0: off). */
  appendsInFlight?: number;
  logger?: StoreLogger;
}

/** Whether a store's schema is what this build expects (readiness, `waymark migrate`). */
export interface SchemaStatus {
  /** True when every migration this build ships is applied. */
  ok: boolean;
  applied: string[];
  pending: string[];
  /** Applied migrations this build does not know: a newer release migrated the store. */
  unknown: string[];
}

/**
 * The operator's side of a store, beside the JournalStore the engine uses: what `waymark migrate`,
 * start-up and readiness need. It answers on resources of its own, so a busy store cannot make
 * readiness flap.
 */
export interface StoreAdmin {
  /** Brings the schema up to this build's; safe to run from several processes at once. */
  migrate(): Promise<{ applied: string[] }>;
  /** Resolves when the store answers; StoreUnavailableError when it does not. */
  ping(): Promise<void>;
  /** Read-only; StoreUnavailableError when the store does not answer. */
  schemaStatus(): Promise<SchemaStatus>;
  /** Closes the admin's resources and the store opened with it. */
  close(): Promise<void>;
}

/** What openStore returns. */
export interface OpenedStore {
  /** The kind's name (`postgres`, `memory`), for the start-up log line. */
  kind: string;
  store: JournalStore;
  admin: StoreAdmin;
}

/** One store implementation, as `open-store.ts` lists it. */
export interface StoreKind {
  name: string;
  /** URL schemes, with the colon (`postgres:`), that pick this kind. */
  schemes: string[];
  /** What a setting of this kind looks like, for error messages: "a postgres:// URL". */
  expects: string;
  /** Opens the store (checking it answers: StoreUnavailableError if not) and its admin side. */
  open(options: StoreOptions): Promise<OpenedStore>;
}
