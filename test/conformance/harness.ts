import { newEntry, type NewJournalEntry } from '../../src/journal/journal-entry.js';
import type { Limits } from '../../src/journal/limits.js';
import type { JournalStore, RunCreateParams } from '../../src/store/store.js';

/** What a store implementation hands the conformance suite for one test. */
export interface ConformanceHarness {
  store: JournalStore;
  /**
   * Lets `ms` pass for everything the store keeps time on: the memory store moves its clock, the
   * Postgres store backdates its timestamp columns (STYLE habit 7: never sleep to wait for a state).
   */
  advance(ms: number): Promise<void>;
  /**
   * Ends `holder`'s lease session as the death of its process would (the registration stays, its
   * session is gone) and resolves once the store can tell: the memory store marks it ended, the
   * Postgres store closes the connection without unregistering and waits for the lock to go.
   */
  endLeaseSession(holder: string): Promise<void>;
  close(): Promise<void>;
}

/** A fresh, empty store per call (the suite calls it once per test). */
export type HarnessFactory = (options?: { limits?: Partial<Limits> }) => Promise<ConformanceHarness>;

export const TTL = 30_000;

export function runParams(overrides: Partial<RunCreateParams> = {}): RunCreateParams {
  return {
    namespace: 'default',
    workflowName: 'refund',
    workflowVersion: '1',
    workflowDigest: 'sha256:abc',
    input: { order: 'o-1', amount: 12.5 },
    ...overrides,
  };
}

/** Creates a run and takes its lease in one call (StartRun with wait). */
export async function startRun(store: JournalStore, overrides: Partial<RunCreateParams> = {}) {
  const { run, lease } = await store.runCreate(runParams({ leaseFor: { holder: 'worker-a', ttlMs: TTL }, ...overrides }));
  if (!lease) throw new Error('runCreate with leaseFor returned no lease');
  return { run, lease };
}

export function step(name: string, fields: Partial<NewJournalEntry> = {}): NewJournalEntry {
  return newEntry({ kind: 'step', name, status: 'ok', contentKey: `ck:${name}`, ...fields });
}

export function suspension(name: string, fields: Partial<NewJournalEntry> = {}): NewJournalEntry {
  return newEntry({ kind: 'approval', name, status: 'suspended', contentKey: `ck:${name}`, ...fields });
}

export function resolution(payload: NewJournalEntry['payload'], dedupeKey: string | null = null): NewJournalEntry {
  return newEntry({ kind: 'approval', name: 'decision', status: 'resolved', payload, dedupeKey });
}

/** Resolves when `register`'s callback fires; rejects after `ms` so a missing wake-up fails fast. */
export function nextCall<T = void>(ms = 5000): { fire: (value: T) => void; promise: Promise<T> } {
  let fire!: (value: T) => void;
  const promise = new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no call within ${ms} ms`)), ms);
    fire = (value: T) => {
      clearTimeout(timer);
      resolve(value);
    };
  });
  return { fire, promise };
}
