// runtime/: CallOrderWatch, the replay check's eye on the order of calls (docs/replay.md "Verdicts").
// Must not change what a call does or returns: it only watches when calls are made and when they settle.
import type { ReplayDecision, EffectRecord } from '../replay/replay.js';
import type { WorkflowContext } from '../author/workflow.js';
import type { Call } from './call.js';
import type { CallObserver } from './execution.js';

/*
 * Resume matches calls by content key, so moving a call replays (docs/journal.md "Matching"). The
 * replay check (`waymark replay`, runtime/journal-replay.ts) is stricter about one thing: a call the
 * code now makes after another call *returned*, whose effect the journal recorded before that
 * other one, means the code's order changed, and with it what the code could compute from the
 * recorded answers. Only calls that were alone in flight in their scope are compared, from the
 * moment they are made to the moment they settle: concurrent calls (Promise.all, and so calls in
 * flight together) finish in any order, and ctx.parallel branches are separate scopes. A call
 * "settles" when the promise its ctx method returned does, which the watch sees through a proxy
 * of ctx; calls an agent makes inside ctx.agent are not seen one by one and are never compared.
 * test/replay/replay-check.test.ts pins both the reorder it reports and the concurrency it allows.
 */

/** One reason a recorded journal does not replay against the code (docs/replay.md "Verdicts"). */
export interface ReplayDivergence {
  verdict: 'nondeterministic' | 'reordered' | 'outcome_changed' | 'workflow_missing' | 'new_call' | 'orphaned';
  /** The journal entry involved (an effect's first entry), or null when none is (a new call, a missing workflow). */
  seq: number | null;
  scope: string;
  kind: string;
  name: string;
  message: string;
}

interface Tracked {
  record: EffectRecord | undefined;
  /** No other call of its scope was in flight at any time between its making and its settling. */
  solo: boolean;
}

interface ScopeState {
  inFlight: Set<Tracked>;
  /** The solo call that settled with the latest journal position so far. */
  latest: EffectRecord | null;
}

export class CallOrderWatch implements CallObserver {
  readonly divergences: ReplayDivergence[] = [];
  /** Calls matched since the current ctx method was entered (claimed by it when it returns). */
  private made: Array<{ scope: string; tracked: Tracked }> = [];
  private readonly scopes = new Map<string, ScopeState>();

  called(call: Call, record: EffectRecord | undefined, decision: ReplayDecision): void {
    const { scope } = call.identity;
    if (decision.action === 'nondeterministic') {
      this.divergences.push({
        verdict: 'nondeterministic', seq: record?.firstSeq ?? null, scope, kind: record?.kind ?? call.kind, name: record?.name ?? call.name,
        message: `the code called ${decision.expected} but the journal has ${decision.found} (${decision.detail})`,
      });
      return;
    }
    const state = this.state(scope);
    const solo = state.inFlight.size === 0;
    const before = state.latest;
    if (solo && record && before && before.firstSeq > record.firstSeq) {
      this.divergences.push({
        verdict: 'reordered', seq: record.firstSeq, scope, kind: record.kind, name: record.name,
        message: `the journal recorded ${record.kind} "${record.name}" (seq ${record.firstSeq}) before ${before.kind} "${before.name}" (seq ${before.firstSeq}), but the code now calls it after that one returned`,
      });
    }
    this.made.push({ scope, tracked: { record, solo } });
  }

  /** The ctx the body gets: the same object behind a proxy that tells the watch when each call settles. */
  wrap(ctx: WorkflowContext): WorkflowContext {
    return new Proxy(ctx, {
      get: (target, prop) => {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== 'function') return value;
        if (prop === 'parallel') {
          // Branch contexts are bound to their scopes: each is watched like the root one.
          return (branches: Array<(branchCtx: WorkflowContext) => Promise<unknown>>) =>
            (value as (b: unknown) => unknown).call(target, branches.map((branch) => (branchCtx: WorkflowContext) => branch(this.wrap(branchCtx))));
        }
        return (...args: unknown[]) => this.invoke(() => (value as (...a: unknown[]) => unknown).apply(target, args));
      },
    });
  }

  private invoke(fn: () => unknown): unknown {
    // Calls matched outside any ctx method (an agent's model calls) are not tracked.
    this.made = [];
    let result: unknown;
    try {
      result = fn();
    } finally {
      this.claim(this.made, result);
      this.made = [];
    }
    return result;
  }

  /** The calls a ctx method made synchronously are in flight until its promise settles. */
  private claim(calls: Array<{ scope: string; tracked: Tracked }>, result: unknown): void {
    for (const { scope, tracked } of calls) {
      const state = this.state(scope);
      if (state.inFlight.size > 0) {
        tracked.solo = false;
        for (const other of state.inFlight) other.solo = false;
      }
      state.inFlight.add(tracked);
    }
    const settle = (): void => {
      for (const { scope, tracked } of calls) {
        const state = this.state(scope);
        state.inFlight.delete(tracked);
        if (tracked.solo && tracked.record && (!state.latest || tracked.record.firstSeq > state.latest.firstSeq)) state.latest = tracked.record;
      }
    };
    if (result !== null && typeof result === 'object' && typeof (result as Promise<unknown>).then === 'function') {
      (result as Promise<unknown>).then(settle, settle);
    } else settle();
  }

  private state(scope: string): ScopeState {
    let state = this.scopes.get(scope);
    if (!state) {
      state = { inFlight: new Set(), latest: null };
      this.scopes.set(scope, state);
    }
    return state;
  }
}
