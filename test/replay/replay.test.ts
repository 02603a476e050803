import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidateTargetError, JournalCorruptError } from '../../src/engine/errors.js';
import {
  callShape, childScope, JournalIndex, openSuspensions, replayDecide, scopeContinues, type ReplayDecision,
} from '../../src/engine/replay/replay.js';
import { ReplayCursor } from '../../src/engine/replay/replay-cursor.js';
import { invalidationEntries } from '../../src/engine/replay/invalidation.js';
import { ENTRY_KINDS, type EntryKind, type JournalEntry } from '../../src/journal/journal-entry.js';
import { identityOf, JournalBuilder, RUN } from './journal-builder.js';

/** The decision for one call against a journal, as replay makes it. */
function decide(entries: JournalEntry[], id: ReturnType<typeof identityOf>, valid?: (s: JournalEntry, r: JournalEntry) => boolean): ReplayDecision {
  const index = JournalIndex.build(RUN, entries);
  return replayDecide(index.record(id), valid ? { index, resolutionIsValid: valid } : { index });
}

const boom = { name: 'Error', message: 'boom' };

describe('replayDecide: the table of DESIGN "What replay does with a matched entry"', () => {
  it('no entry: live (a miss)', () => {
    expect(decide([], identityOf('step', 'a'))).toEqual({ action: 'live' });
  });

  it('ok (two writes): returns the recorded value', () => {
    const j = new JournalBuilder();
    const h = j.head('step', 'a', 'running');
    j.ref(h, 'ok', { payload: { n: 1 } });
    expect(decide(j.entries, identityOf('step', 'a'))).toMatchObject({ action: 'return', value: { n: 1 } });
  });

  it('ok (one write, a read-only effect): returns the recorded value', () => {
    const j = new JournalBuilder();
    j.head('tool', 'lookup', 'ok', { args: { q: 1 }, payload: 'found' });
    expect(decide(j.entries, identityOf('tool', 'lookup', { args: { q: 1 } }))).toMatchObject({ action: 'return', value: 'found' });
  });

  it('info (an emitted event): answered, not emitted again', () => {
    const j = new JournalBuilder();
    j.head('emit', 'progress', 'info', { args: { type: 'progress' }, payload: { type: 'progress' } });
    expect(decide(j.entries, identityOf('emit', 'progress', { args: { type: 'progress' } })).action).toBe('return');
  });

  it('error with a later effect in the same scope: re-throws the recorded error', () => {
    const j = new JournalBuilder();
    const h = j.head('step', 'a', 'running');
    j.ref(h, 'error', { error: boom });
    j.head('step', 'b', 'running');
    expect(decide(j.entries, identityOf('step', 'a'))).toMatchObject({ action: 'throw', error: boom });
  });

  it('error with nothing after it (the run died on it): reruns', () => {
    const j = new JournalBuilder();
    j.head('step', 'before', 'ok');
    const h = j.head('step', 'a', 'running');
    j.ref(h, 'error', { error: boom });
    j.status('FAILED');
    expect(decide(j.entries, identityOf('step', 'a'))).toMatchObject({ action: 'rerun', because: 'error' });
  });

  it('error in a branch, later work only in a concurrent sibling branch: reruns', () => {
    const j = new JournalBuilder();
    const h = j.head('step', 'a', 'running', { scope: 'par:0:0' });
    j.ref(h, 'error', { error: boom });
    j.head('step', 'b', 'running', { scope: 'par:0:1' });
    expect(decide(j.entries, identityOf('step', 'a', { scope: 'par:0:0' })).action).toBe('rerun');
  });

  it('error in a branch, later work in the enclosing scope or a later call site: re-throws', () => {
    for (const later of ['', 'par:1:0', 'par:0:0/par:0:1']) {
      const j = new JournalBuilder();
      const h = j.head('step', 'a', 'running', { scope: 'par:0:0' });
      j.ref(h, 'error', { error: boom });
      j.head('step', 'b', 'ok', { scope: later });
      expect(decide(j.entries, identityOf('step', 'a', { scope: 'par:0:0' })).action, `later work in "${later}"`).toBe('throw');
    }
  });

  it('error whose effect started before the error (a concurrent call finishing later) is no evidence: reruns', () => {
    const j = new JournalBuilder();
    const a = j.head('step', 'a', 'running');
    const b = j.head('step', 'b', 'running');
    j.ref(a, 'error', { error: boom });
    j.ref(b, 'ok', { payload: 1 });
    expect(decide(j.entries, identityOf('step', 'a')).action).toBe('rerun');
  });

  it('running with no terminal: redispatches under the same head (same idempotency key)', () => {
    const j = new JournalBuilder();
    const h = j.head('tool', 'charge', 'running', { args: { amount: 5 } });
    const d = decide(j.entries, identityOf('tool', 'charge', { args: { amount: 5 } }));
    expect(d).toMatchObject({ action: 'redispatch', head: { seq: h } });
  });

  it('cancelled: reruns', () => {
    const j = new JournalBuilder();
    const h = j.head('step', 'a', 'running');
    j.ref(h, 'cancelled');
    expect(decide(j.entries, identityOf('step', 'a'))).toMatchObject({ action: 'rerun', because: 'cancelled' });
  });

  it('ok then invalidated (cancelled pointing at it): reruns', () => {
    const j = new JournalBuilder();
    const h = j.head('step', 'a', 'running');
    j.ref(h, 'ok', { payload: 1 });
    j.ref(h, 'cancelled', { payload: { reason: 'invalidated', seq: h } });
    expect(decide(j.entries, identityOf('step', 'a')).action).toBe('rerun');
  });

  it('the latest attempt decides: error, then a rerun that succeeded', () => {
    const j = new JournalBuilder();
    const h1 = j.head('step', 'a', 'running');
    j.ref(h1, 'error', { error: boom });
    const h2 = j.head('step', 'a', 'running');
    j.ref(h2, 'ok', { payload: 'second time' });
    expect(decide(j.entries, identityOf('step', 'a'))).toMatchObject({ action: 'return', value: 'second time' });
  });

  it('suspended and still open: parks', () => {
    const j = new JournalBuilder();
    const s = j.head('approval', 'approval', 'suspended');
    expect(decide(j.entries, identityOf('approval', 'approval'))).toMatchObject({ action: 'park', suspension: { seq: s } });
  });

  it('suspended and resolved: returns the winning payload; later no-ops do not change it', () => {
    const j = new JournalBuilder();
    const s = j.head('signal', 'go', 'suspended');
    j.ref(s, 'resolved', { payload: { source: 'signal', value: 'first' } });
    j.ref(s, 'noop', { payload: { source: 'signal', value: 'second' } });
    expect(decide(j.entries, identityOf('signal', 'go'))).toMatchObject({ action: 'resolved', resolution: { payload: { value: 'first' } } });
  });

  it('the first VALID resolution wins; invalid ones are counted', () => {
    const j = new JournalBuilder();
    const s = j.head('signal', 'go', 'suspended');
    j.ref(s, 'resolved', { payload: { value: 'bad' } });
    j.ref(s, 'noop', { payload: { value: 'good' } });
    const valid = (_s: JournalEntry, r: JournalEntry) => (r.payload as { value: string }).value === 'good';
    expect(decide(j.entries, identityOf('signal', 'go'), valid)).toMatchObject({ action: 'resolved', invalidResolutions: 1, resolution: { payload: { value: 'good' } } });
  });

  it('only invalid resolutions: parks, counting them', () => {
    const j = new JournalBuilder();
    const s = j.head('signal', 'go', 'suspended');
    j.ref(s, 'resolved', { payload: { value: 'bad' } });
    expect(decide(j.entries, identityOf('signal', 'go'), () => false)).toMatchObject({ action: 'park', invalidResolutions: 1 });
  });

  it('suspended then invalidated: reruns (a new wait)', () => {
    const j = new JournalBuilder();
    const s = j.head('approval', 'approval', 'suspended');
    j.ref(s, 'resolved', { payload: { value: { approved: true } } });
    j.ref(s, 'cancelled');
    expect(decide(j.entries, identityOf('approval', 'approval')).action).toBe('rerun');
  });
});

describe('replayDecide: a journal that disagrees with the call is a verdict (non-determinism)', () => {
  /** The decision for a call of `kind` "name", as Execution.call asks for it. */
  function decideCall(entries: JournalEntry[], kind: EntryKind, name: string): ReplayDecision {
    const index = JournalIndex.build(RUN, entries);
    return replayDecide(index.record(identityOf(kind, name)), { index, call: { kind, name } });
  }

  it('another name under the same content key (an edited journal)', () => {
    const j = new JournalBuilder();
    j.head('step', 'total', 'ok', { payload: 1 });
    j.entries[0] = { ...j.entries[0]!, name: 'renamed' };
    expect(decideCall(j.entries, 'step', 'total')).toEqual({
      action: 'nondeterministic', expected: 'step "total"', found: 'step "renamed"', detail: `same content key ${identityOf('step', 'total').contentKey}`,
    });
  });

  it('another kind under the same content key', () => {
    const j = new JournalBuilder();
    j.head('step', 'a', 'ok');
    j.entries[0] = { ...j.entries[0]!, kind: 'tool' };
    expect(decideCall(j.entries, 'step', 'a')).toMatchObject({ action: 'nondeterministic', expected: 'step "a"', found: 'tool "a"' });
  });

  it('a dispatched effect matching an open or a resolved wait', () => {
    const open = new JournalBuilder();
    open.head('step', 'a', 'suspended');
    expect(decideCall(open.entries, 'step', 'a')).toEqual({
      action: 'nondeterministic', expected: 'step "a"', found: 'a park suspension', detail: 'an effect matched a wait',
    });
    const resolved = new JournalBuilder();
    const s = resolved.head('tool', 'a', 'suspended');
    resolved.ref(s, 'resolved', { payload: { value: 1 } });
    expect(decideCall(resolved.entries, 'tool', 'a')).toMatchObject({ action: 'nondeterministic', found: 'a resolved suspension' });
  });

  it('a wait matching a dispatched effect: recorded value, recorded error, or intent', () => {
    const ok = new JournalBuilder();
    ok.head('sleep', 'sleep', 'ok');
    expect(decideCall(ok.entries, 'sleep', 'sleep')).toEqual({
      action: 'nondeterministic', expected: 'a sleep wait "sleep"', found: 'an effect (return)', detail: 'a wait matched an effect',
    });
    const handled = new JournalBuilder();
    const h = handled.head('signal', 'go', 'running');
    handled.ref(h, 'error', { error: boom });
    handled.head('step', 'after', 'ok');
    expect(decideCall(handled.entries, 'signal', 'go')).toMatchObject({ action: 'nondeterministic', found: 'an effect (throw)' });
    const intent = new JournalBuilder();
    intent.head('approval', 'approval', 'running');
    expect(decideCall(intent.entries, 'approval', 'approval')).toMatchObject({ action: 'nondeterministic', found: 'an effect (redispatch)' });
  });

  it('what both shapes may do stays a table verdict: a rerun, a miss, a match of the right shape', () => {
    const cancelledWait = new JournalBuilder();
    const s = cancelledWait.head('step', 'a', 'suspended');
    cancelledWait.ref(s, 'cancelled');
    expect(decideCall(cancelledWait.entries, 'step', 'a')).toMatchObject({ action: 'rerun', because: 'cancelled' });
    const diedOn = new JournalBuilder();
    const h = diedOn.head('child', 'kid', 'running');
    diedOn.ref(h, 'error', { error: boom });
    expect(decideCall(diedOn.entries, 'child', 'kid')).toMatchObject({ action: 'rerun', because: 'error' });
    expect(decideCall([], 'signal', 'go')).toEqual({ action: 'live' });
    const parked = new JournalBuilder();
    parked.head('signal', 'go', 'suspended');
    expect(decideCall(parked.entries, 'signal', 'go').action).toBe('park');
  });

  it('ctx.agent only reserves an identity: no shape to disagree with, but a name still must match', () => {
    const j = new JournalBuilder();
    j.head('agent', 'agent', 'suspended');
    expect(decideCall(j.entries, 'agent', 'agent').action).toBe('park');
    j.entries[0] = { ...j.entries[0]!, name: 'planner' };
    expect(decideCall(j.entries, 'agent', 'agent').action).toBe('nondeterministic');
  });

  it('the shapes: waits suspend, ctx.agent reserves, the rest dispatch', () => {
    expect(ENTRY_KINDS.filter((k) => callShape(k) === 'wait')).toEqual(['sleep', 'signal', 'approval', 'child']);
    expect(ENTRY_KINDS.filter((k) => callShape(k) === 'reservation')).toEqual(['agent']);
  });

  it('without a call (openSuspensions, the preview) the table alone decides', () => {
    const j = new JournalBuilder();
    j.head('step', 'a', 'suspended');
    const index = JournalIndex.build(RUN, j.entries);
    expect(replayDecide(index.record(identityOf('step', 'a')), { index }).action).toBe('park');
  });
});

describe('JournalIndex: a journal that does not fit together fails loudly', () => {
  it('refuses seqs with a gap (a removed entry)', () => {
    const j = new JournalBuilder();
    j.head('step', 'a', 'ok');
    j.head('step', 'b', 'ok');
    const entries = [j.entries[1]!];
    expect(() => JournalIndex.build(RUN, entries)).toThrow(JournalCorruptError);
  });

  it('refuses a terminal pointing at no effect', () => {
    const j = new JournalBuilder();
    const h = j.head('step', 'a', 'running');
    j.ref(h, 'ok');
    const broken = j.entries.map((e) => (e.seq === 1 ? { ...e, refSeq: 7 } : e));
    expect(() => JournalIndex.build(RUN, broken)).toThrow(/refers to seq 7/);
  });

  it('refuses a resolution of something that is not a suspension', () => {
    const j = new JournalBuilder();
    const h = j.head('step', 'a', 'running');
    j.ref(h, 'resolved');
    expect(() => JournalIndex.build(RUN, j.entries)).toThrow(/not a suspension/);
  });

  it('refuses two effects of different kinds under one identity', () => {
    const j = new JournalBuilder();
    j.head('step', 'a', 'ok');
    const second = { ...j.entries[0]!, seq: 1, kind: 'tool' as const };
    expect(() => JournalIndex.build(RUN, [...j.entries, second])).toThrow(JournalCorruptError);
  });
});

describe('JournalIndex: what it keeps per effect (a resume indexes up to 100,000)', () => {
  it('a record is its first head entry, not a copy, and its latest attempt decides; earlier ones stay by seq', () => {
    const j = new JournalBuilder();
    const first = j.head('step', 'a', 'running');
    j.ref(first, 'error', { error: boom });
    const second = j.head('step', 'a', 'running');
    j.ref(second, 'ok', { payload: 2 });
    const index = JournalIndex.build(RUN, j.entries);
    const record = index.record(identityOf('step', 'a'))!;
    expect(record.identity).toBe(j.entries[first]);
    expect(record.latest.head).toBe(j.entries[second]);
    expect(record.latest.terminal?.payload).toBe(2);
    expect(index.attemptAt(first)?.terminal?.error).toEqual(boom);
    expect(index.attemptAt(first + 1)).toBeUndefined(); // a terminal starts no attempt
  });

  it('attempts without resolutions share one empty list; a resolution gives its attempt a list of its own', () => {
    const j = new JournalBuilder();
    const a = j.head('signal', 'go', 'suspended');
    const b = j.head('signal', 'stop', 'suspended');
    j.ref(b, 'resolved', { payload: 'now' });
    j.head('step', 'c', 'ok');
    const index = JournalIndex.build(RUN, j.entries);
    expect(index.attemptAt(a)!.resolutions).toEqual([]);
    expect(index.attemptAt(a)!.resolutions).toBe(index.attemptAt(b + 2)!.resolutions);
    expect(index.attemptAt(b)!.resolutions.map((e) => e.payload)).toEqual(['now']);
  });
});

describe('ReplayCursor: scoped forward matching', () => {
  function journalOf(names: string[], scope = ''): JournalEntry[] {
    const j = new JournalBuilder();
    for (const n of names) j.head('step', n, 'ok', { scope, payload: n });
    return j.entries;
  }

  it('an inserted call misses without moving the cursor; the calls around it still match', () => {
    const cursor = new ReplayCursor(JournalIndex.build(RUN, journalOf(['a', 'c'])));
    expect(cursor.take(identityOf('step', 'a'))).toBeDefined();
    expect(cursor.position('')).toBe(1);
    expect(cursor.take(identityOf('step', 'b'))).toBeUndefined();
    expect(cursor.position('')).toBe(1);
    expect(cursor.take(identityOf('step', 'c'))).toBeDefined();
    expect(cursor.position('')).toBe(2);
    expect(cursor.unconsumed()).toEqual([]);
  });

  it('a removed call leaves its entry orphaned (reported, never consumed)', () => {
    const cursor = new ReplayCursor(JournalIndex.build(RUN, journalOf(['a', 'b', 'c'])));
    cursor.take(identityOf('step', 'a'));
    cursor.take(identityOf('step', 'c'));
    expect(cursor.position('')).toBe(1);
    expect(cursor.unconsumed().map((r) => r.name)).toEqual(['b']);
  });

  it('calls finishing in another order than journaled still all match', () => {
    const cursor = new ReplayCursor(JournalIndex.build(RUN, journalOf(['a', 'b', 'c', 'd'])));
    for (const n of ['a', 'c', 'b', 'd']) expect(cursor.take(identityOf('step', n)), n).toBeDefined();
    expect(cursor.position('')).toBe(4);
  });

  it('an effect is consumed once; identical calls are told apart by occurrence', () => {
    const j = new JournalBuilder();
    j.head('step', 'poll', 'ok', { occurrence: 0, payload: 0 });
    j.head('step', 'poll', 'ok', { occurrence: 1, payload: 1 });
    const cursor = new ReplayCursor(JournalIndex.build(RUN, j.entries));
    expect(cursor.take(identityOf('step', 'poll', { occurrence: 0 }))?.firstSeq).toBe(0);
    expect(cursor.take(identityOf('step', 'poll', { occurrence: 0 }))).toBeUndefined();
    expect(cursor.take(identityOf('step', 'poll', { occurrence: 1 }))?.firstSeq).toBe(1);
    expect(cursor.take(identityOf('step', 'poll', { occurrence: 2 }))).toBeUndefined();
  });

  it('scopes have separate cursors', () => {
    const j = new JournalBuilder();
    j.head('step', 'a', 'ok', { scope: 'par:0:0' });
    j.head('step', 'a', 'ok', { scope: 'par:0:1' });
    const cursor = new ReplayCursor(JournalIndex.build(RUN, j.entries));
    expect(cursor.take(identityOf('step', 'a', { scope: 'par:0:1' }))).toBeDefined();
    expect(cursor.position('par:0:1')).toBe(1);
    expect(cursor.position('par:0:0')).toBe(0);
    expect(cursor.take(identityOf('step', 'a'))).toBeUndefined();
  });
});

describe('scopes', () => {
  it('childScope joins call sites', () => {
    expect(childScope('', 'par:0:1')).toBe('par:0:1');
    expect(childScope('par:0:1', 'par:2:0')).toBe('par:0:1/par:2:0');
  });

  it.each([
    ['', '', true],
    ['', 'par:0:1', true],
    ['par:0:0', '', true],
    ['par:0:0', 'par:0:0/par:1:0', true],
    ['par:0:0', 'par:1:0', true],
    ['par:0:0', 'par:0:1', false],
    ['par:0:0/par:1:0', 'par:0:1', false],
    ['par:0:0/par:1:0', 'par:0:0/par:1:1', false],
    ['par:0:0/par:1:0', 'par:0:0/par:2:0', true],
  ])('work in "%s" then "%s": continued = %s', (failed, later, expected) => {
    expect(scopeContinues(failed, later)).toBe(expected);
  });
});

describe('invalidationEntries', () => {
  function sample() {
    const j = new JournalBuilder();
    j.status('RUNNING');
    const a = j.head('step', 'a', 'running');
    const aOk = j.ref(a, 'ok', { payload: 1 });
    const s = j.head('approval', 'approval', 'suspended');
    const r = j.ref(s, 'resolved', { payload: { value: { approved: true } } });
    return { j, a, aOk, s, r };
  }

  it('one cancelled entry per effect, pointing at the head of its latest attempt, whichever of its entries is named', () => {
    const { j, a, aOk, s, r } = sample();
    const out = invalidationEntries(JournalIndex.build(RUN, j.entries), j.entries, [aOk, a, r]);
    expect(out.map((e) => [e.status, e.refSeq, e.kind])).toEqual([['cancelled', a, 'step'], ['cancelled', s, 'approval']]);
    expect(out[0]!.idempotencyKey).toBe(j.entries[a]!.idempotencyKey);
  });

  it('refuses unknown seqs, status entries and superseded attempts', () => {
    const { j } = sample();
    const index = JournalIndex.build(RUN, j.entries);
    expect(() => invalidationEntries(index, j.entries, [99])).toThrow(InvalidateTargetError);
    expect(() => invalidationEntries(index, j.entries, [0])).toThrow(/status change/);
    const k = new JournalBuilder();
    const h1 = k.head('step', 'a', 'running');
    k.ref(h1, 'error', { error: boom });
    k.head('step', 'a', 'running');
    expect(() => invalidationEntries(JournalIndex.build(RUN, k.entries), k.entries, [h1])).toThrow(/later attempt/);
  });

  it('skips an effect already unpinned', () => {
    const j = new JournalBuilder();
    const h = j.head('step', 'a', 'running');
    j.ref(h, 'cancelled');
    expect(invalidationEntries(JournalIndex.build(RUN, j.entries), j.entries, [h])).toEqual([]);
  });
});

describe('openSuspensions', () => {
  it('lists latest attempts of waits with no valid resolution', () => {
    const j = new JournalBuilder();
    const s1 = j.head('signal', 'a', 'suspended');
    const s2 = j.head('signal', 'b', 'suspended');
    j.ref(s1, 'resolved', { payload: { value: 1 } });
    expect(openSuspensions(JournalIndex.build(RUN, j.entries)).map((e) => e.seq)).toEqual([s2]);
  });
});

describe('property: a completed effect is never executed again', () => {
  // Random journals built from random effect histories: whatever else is in the journal, an
  // effect whose latest attempt ended `ok` is answered from the journal and never rerun.
  const op = fc.record({
    name: fc.constantFrom('a', 'b', 'c'),
    scope: fc.constantFrom('', 'par:0:0', 'par:0:1', 'par:1:0'),
    end: fc.constantFrom('ok', 'error', 'cancelled', 'none', 'ok-one-write', 'invalidated'),
  });

  it('holds for any mix of outcomes, scopes and attempts', () => {
    fc.assert(fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
      const j = new JournalBuilder();
      const occurrences = new Map<string, number>();
      const expected = new Map<string, string>();
      for (const o of ops) {
        const slot = `${o.scope}/${o.name}`;
        // Reuse an identity sometimes (a rerun) by not advancing the occurrence after a non-ok end.
        const occ = occurrences.get(slot) ?? 0;
        const id = { scope: o.scope, occurrence: occ };
        if (o.end === 'ok-one-write') j.head('step', o.name, 'ok', id);
        else {
          const h = j.head('step', o.name, 'running', id);
          if (o.end === 'ok' || o.end === 'invalidated') j.ref(h, 'ok', { payload: 1 });
          if (o.end === 'invalidated') j.ref(h, 'cancelled');
          if (o.end === 'error') j.ref(h, 'error', { error: boom });
          if (o.end === 'cancelled') j.ref(h, 'cancelled');
        }
        expected.set(`${slot}#${occ}`, o.end);
        if (o.end === 'ok' || o.end === 'ok-one-write') occurrences.set(slot, occ + 1);
      }
      const index = JournalIndex.build(RUN, j.entries);
      for (const [key, end] of expected) {
        const [slot, occ] = key.split('#') as [string, string];
        const [scope, name] = [slot.slice(0, slot.lastIndexOf('/')), slot.slice(slot.lastIndexOf('/') + 1)];
        const d = replayDecide(index.record(identityOf('step', name, { scope, occurrence: Number(occ) })), { index });
        if (end === 'ok' || end === 'ok-one-write') expect(d.action).toBe('return');
        if (end === 'none') expect(d.action).toBe('redispatch');
        if (end === 'cancelled' || end === 'invalidated') expect(d.action).toBe('rerun');
        if (end === 'error') expect(['rerun', 'throw']).toContain(d.action);
      }
    }), { numRuns: 300 });
  });
});
