import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RunEngine } from '../../src/engine/run-engine.js';
import { Registry } from '../../src/engine/registry.js';
import { PayloadSealer, SealedPayloadError } from '../../src/engine/access/payload-sealer.js';
import { defineTool, defineWorkflow } from '../../src/index.js';
import { REDACTED } from '../../src/journal/sealed-payload.js';
import { entryToProto, eventOf } from '../../src/server/convert/convert-journal.js';
import { toJson } from '@bufbuild/protobuf';
import { JournalEntrySchema } from '../../src/gen/waymark/v1/run_pb.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { NS, TTL } from './harness.js';

/*
 * Secret tools on a real PostgreSQL: the bytes stored in `journal` hold neither the arguments nor
 * the result in plaintext, the run's replay still gets them (the tool is not called again), the
 * journal as GetJournal and streams render it shows them redacted, and a key rotation keeps old
 * entries readable while new ones seal with the new key.
 */

const CARD = '4111-1111-1111-1111';
const TOKEN = 'tok_live_PLAINTEXT_9f8e7d';

let db: MigratedDatabase;
let store: PostgresStore;
beforeAll(async () => {
  db = await createMigratedDatabase('waymark_secrets');
  store = await PostgresStore.connect({ url: db.url, applicationName: 'secret-tools', poolSize: 4 });
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

const key = (id: string) => ({ id, key: randomBytes(32) });

function build(sealer: PayloadSealer | null, calls: string[]) {
  const vault = defineTool({
    name: 'vault_charge', description: 'charges a card', input: z.object({ card: z.string() }), secret: true,
    execute: async ({ card }, info) => {
      calls.push(info.idempotencyKey);
      return { token: TOKEN, last4: card.slice(-4) };
    },
  });
  const wf = defineWorkflow({ name: 'pay', input: z.object({ card: z.string() }) }, async (ctx, { card }) => {
    const charged = await ctx.tool(vault, { card });
    await ctx.signal('go');
    return { tokenLength: charged.token.length, last4: charged.last4 };
  });
  const registry = new Registry({ sealer }).register(vault, wf);
  return new RunEngine({ store, registry, holder: `w-${randomBytes(3).toString('hex')}`, leaseTtlMs: TTL });
}

describe('secret tools', () => {
  it('are sealed in PostgreSQL, redacted in reads, and opened for the run\'s own replay', async () => {
    const first = key('k1');
    const calls: string[] = [];
    const engine = build(new PayloadSealer([first]), calls);
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'pay', input: { card: CARD }, execute: true });
    expect(run.status).toBe('SUSPENDED');
    expect(calls).toHaveLength(1);

    // The stored bytes: the tool's rows carry the sealed envelope, never the plaintext.
    const rows = (await db.admin.query<{ kind: string; status: string; payload: string }>(
      'SELECT kind, status, payload::text AS payload FROM journal WHERE run_id = $1 ORDER BY seq', [run.id])).rows;
    const toolRows = rows.filter((r) => r.kind === 'tool');
    expect(toolRows.map((r) => r.status)).toEqual(['running', 'ok']);
    for (const r of toolRows) {
      expect(r.payload).toContain('"$waymarkSealed"');
      expect(r.payload).toContain('"kid": "k1"');
    }
    const everything = rows.map((r) => r.payload).join('\n');
    expect(everything).not.toContain(TOKEN);
    expect(everything).not.toContain(CARD);
    expect(everything).not.toContain('1111-1111');

    // What GetJournal and the event stream send.
    const entries = await store.journalList({ runId: run.id });
    const shown = JSON.stringify(entries.filter((e) => e.kind === 'tool').map((e) => [toJson(JournalEntrySchema, entryToProto(e)), eventOf(e)]), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
    expect(shown).not.toContain(TOKEN);
    expect(shown).not.toContain(CARD);
    expect(toJson(JournalEntrySchema, entryToProto(entries.find((e) => e.kind === 'tool' && e.status === 'ok')!))).toMatchObject({ payload: REDACTED });

    // The signal resumes the run: a replay from the top serves the tool from the journal (opened), no second call.
    await engine.signalSend({ runId: run.id, namespace: NS, name: 'go', payload: null, signalId: 's1' });
    const done = await engine.runExecute({ runId: run.id, namespace: NS });
    expect(done?.outcome).toBe('succeeded');
    expect((await store.runGet({ runId: run.id, namespace: NS })).output).toEqual({ tokenLength: TOKEN.length, last4: '1111' });
    expect(calls).toHaveLength(1);
  });

  it('keep opening with a rotated-out key listed after the new one; without it the replay fails loudly, never reruns the tool', async () => {
    const old = key('k-old');
    const fresh = key('k-new');
    const calls: string[] = [];
    const before = build(new PayloadSealer([old]), calls);
    const parked = await Promise.all([1, 2].map(() => before.runStart({ namespace: NS, workflowName: 'pay', input: { card: CARD }, execute: true })));
    for (const { run } of parked) await before.signalSend({ runId: run.id, namespace: NS, name: 'go', payload: null, signalId: 's1' });
    const [rotatedRun, strandedRun] = parked.map((p) => p.run);

    // Rotation: the new key first, the old one after it. The old entries open; new runs seal with the new key.
    const rotated = build(new PayloadSealer([fresh, old]), calls);
    expect((await rotated.runExecute({ runId: rotatedRun!.id, namespace: NS }))?.outcome).toBe('succeeded');
    expect((await store.runGet({ runId: rotatedRun!.id, namespace: NS })).output).toEqual({ tokenLength: TOKEN.length, last4: '1111' });
    const { run: newer } = await rotated.runStart({ namespace: NS, workflowName: 'pay', input: { card: CARD }, execute: true });
    const newest = (await db.admin.query<{ payload: string }>("SELECT payload::text AS payload FROM journal WHERE run_id = $1 AND kind = 'tool'", [newer.id])).rows;
    expect(newest.every((r) => r.payload.includes('"kid": "k-new"'))).toBe(true);

    // The old key dropped too early: the sealed result cannot be opened; the run fails naming the key id.
    const without = build(new PayloadSealer([fresh]), calls);
    expect((await without.runExecute({ runId: strandedRun!.id, namespace: NS }))?.outcome).toBe('failed');
    expect((await store.runGet({ runId: strandedRun!.id, namespace: NS })).error?.message).toMatch(/key id "k-old" is not in WAYMARK_SECRETS_KEYS/);
    expect(calls).toHaveLength(3); // two runs before the rotation and one after: no replay called the tool again
  });

  it('refuse to register without a key, and a payload copied into another run does not open', () => {
    expect(() => build(null, [])).toThrow(/marked secret.*WAYMARK_SECRETS_KEYS/);
    const sealer = new PayloadSealer([key('k1')]);
    const sealed = sealer.seal({ token: TOKEN }, 'run-a');
    expect(sealer.open(sealed, 'run-a')).toEqual({ token: TOKEN });
    expect(() => sealer.open(sealed, 'run-b')).toThrow(SealedPayloadError);
  });
});
