import { RunEngine } from '../../../src/engine/run-engine.js';
import { Registry } from '../../../src/engine/registry.js';
import type { Tool } from '../../../src/engine/author/tool.js';
import type { Workflow } from '../../../src/engine/author/workflow.js';
import type { JournalStore } from '../../../src/store/store.js';
import type { EffectTracer } from '../../../src/engine/runtime/effect-tracer.js';
import { FakeClock, TTL } from '../harness.js';

export interface SuiteEnv {
  /** A fresh store; `clock` is its database clock when the store supports a fake one. */
  makeStore(clock: FakeClock): Promise<JournalStore>;
  /** Whether the store follows the fake clock (then the engine reads it too). */
  fakeClock: boolean;
  /** Lets `ms` pass for the store: the memory store moves its clock, Postgres backdates rows. */
  advance(clock: FakeClock, ms: number): Promise<void>;
  teardown?(): Promise<void>;
}

/** What each part of the suite gets: the environment and a way to build an engine over it. */
export interface Suite {
  label: string;
  env: SuiteEnv;
  setup(items: (Workflow | Tool)[], o?: { holder?: string; clock?: FakeClock; store?: JournalStore; journalPageSize?: number; tracer?: EffectTracer }): Promise<{ clock: FakeClock; store: JournalStore; registry: Registry; engine: RunEngine }>;
  entriesOf(store: JournalStore, runId: string): ReturnType<JournalStore['journalList']>;
}

export function makeSuite(label: string, env: SuiteEnv): Suite {
  return {
    label,
    env,
    async setup(items, o = {}) {
      const clock = o.clock ?? new FakeClock();
      const store = o.store ?? (await env.makeStore(clock));
      const registry = new Registry().register(...items);
      const engine = new RunEngine({ store, registry, holder: o.holder ?? 'worker-1', leaseTtlMs: TTL, ...(o.journalPageSize ? { journalPageSize: o.journalPageSize } : {}), ...(o.tracer ? { tracer: o.tracer } : {}), ...(env.fakeClock ? { clock: clock.now } : {}) });
      return { clock, store, registry, engine };
    },
    entriesOf: (store, runId) => store.journalList({ runId }),
  };
}

/** A promise a test resolves by hand: how tests wait for a state without sleeping. */
export function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A deadline that is already due on any clock. */
export const PAST = new Date('2000-01-01T00:00:00Z');
