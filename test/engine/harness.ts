import { afterEach, beforeEach, vi } from 'vitest';
import { z } from 'zod';
import { RunEngine } from '../../src/engine/run-engine.js';
import { Registry } from '../../src/engine/registry.js';
import type { Workflow } from '../../src/engine/author/workflow.js';
import type { Tool } from '../../src/engine/author/tool.js';
import type { JournalEntry } from '../../src/journal/journal-entry.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { JournalStore } from '../../src/store/store.js';

/** A clock tests move by hand; shared by the store (database clock) and the engine. */
export class FakeClock {
  private ms: number;
  constructor(start = '2030-01-01T00:00:00.000Z') {
    this.ms = Date.parse(start);
  }
  readonly now = (): Date => new Date(this.ms);
  advance(ms: number): void {
    this.ms += ms;
  }
}

/**
 * The independent oracle of research/reliability.md §4.0: every execution of an effect reports
 * here with its idempotency key, outside the engine and the journal.
 */
export class EffectSink {
  readonly deliveries: { label: string; key: string }[] = [];
  deliver(label: string, key: string): void {
    this.deliveries.push({ label, key });
  }
  count(label: string): number {
    return this.deliveries.filter((d) => d.label === label).length;
  }
  keysOf(label: string): Set<string> {
    return new Set(this.deliveries.filter((d) => d.label === label).map((d) => d.key));
  }
  byKey(): Map<string, number> {
    const m = new Map<string, number>();
    for (const d of this.deliveries) m.set(d.key, (m.get(d.key) ?? 0) + 1);
    return m;
  }
}

export const NS = 'test';
export const TTL = 30_000;

export function setup(items: (Workflow | Tool)[], options: { store?: JournalStore; clock?: FakeClock; holder?: string } = {}) {
  const clock = options.clock ?? new FakeClock();
  const store = options.store ?? new MemoryStore({ clock: clock.now });
  const registry = new Registry().register(...items);
  const engine = new RunEngine({ store, registry, holder: options.holder ?? 'worker-1', leaseTtlMs: TTL, clock: clock.now });
  return { clock, store, registry, engine };
}

export async function journal(store: JournalStore, runId: string): Promise<JournalEntry[]> {
  return store.journalList({ runId });
}

/** Entries without the status events, as `status kind name` strings: easy to eyeball in a failure. */
export function shape(entries: JournalEntry[]): string[] {
  return entries.filter((e) => e.kind !== 'status').map((e) => `${e.status} ${e.kind} ${e.name}${e.scope ? ` @${e.scope}` : ''}`);
}

export const anyInput = z.object({}).passthrough();

/**
 * Fakes the timers and Date (not setImmediate) around every test of the calling file, so "idle for
 * 10 s" is exact and nothing sleeps; settle() then lets pending promise chains run.
 */
export function useFakeTimers(): void {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}

/** Lets every pending promise chain run (setImmediate is not faked: it is the real event loop turning). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
