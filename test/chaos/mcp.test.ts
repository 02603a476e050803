import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { until } from '../support/until.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { deliveriesLog, startHttpMcpServer } from '../mcp/mcp-fixture.js';
import { chaosEnv, Driver, kill, NS, startServer, startSweeper } from './support/cluster.js';

/*
 * An MCP tool call across real processes (docs/mcp.md "What a run records"): a replica is
 * SIGKILLed while the counting MCP server (test/mcp/fixtures/counting-mcp-server.mjs, Streamable
 * HTTP, its own process) holds the call. Another replica continues the run: it sends the call again
 * with the same idempotency key, the server applies it once, and the journal holds one pin, one
 * intent and one result.
 */

describe('an MCP call whose replica is SIGKILLed', () => {
  const log = deliveriesLog();
  let db: TestDatabase | undefined;
  let driver: Driver | undefined;
  let sweeper: WaymarkProcess | undefined;
  let mcp: Awaited<ReturnType<typeof startHttpMcpServer>> | undefined;
  const replicas: WaymarkProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('waymark_chaos_mcp');
    mcp = await startHttpMcpServer(log.file);
    sweeper = await startSweeper(chaosEnv(db.url));
    driver = await Driver.open(db.url);
    await driver.store.mcpServerPut({ namespace: NS, name: 'shop', transport: { kind: 'http', url: mcp.url, headers: {} }, tools: {} });
  }, 120_000);
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await sweeper?.stop();
    await driver?.close();
    await mcp?.stop();
    await db?.drop();
    log.remove();
  });

  it('finishes on another replica with the tool applied once per key', { timeout: 300_000 }, async () => {
    replicas.push(await startServer(chaosEnv(db!.url)));
    const runId = await driver!.start('chaos-mcp', { order: 'o-crash', holdMs: 60_000 });
    // The call reached the server (its delivery is logged before the hold): kill the replica making it.
    await until('the first delivery', () => log.of('refund').some((d) => d.args.order === 'o-crash') || undefined, 120_000);
    await kill(replicas[0]!);
    replicas.push(await startServer(chaosEnv(db!.url)));
    await driver!.waitEnded([runId], 180_000);
    const run = await driver!.store.runGet({ runId, namespace: NS });
    expect(run.status).toBe('SUCCEEDED');
    const entries = (await driver!.store.journalList({ runId })).filter((e) => e.kind !== 'status');
    const intents = entries.filter((e) => e.kind === 'tool' && e.status === 'running');
    expect(intents).toHaveLength(1);
    expect(entries.filter((e) => e.kind === 'tool' && e.status === 'ok')).toHaveLength(1);
    expect(entries.filter((e) => e.name === 'mcp:shop:tools/list' && e.status === 'ok')).toHaveLength(1);
    const key = intents[0]!.idempotencyKey;
    const delivered = log.of('refund').filter((d) => d.args.order === 'o-crash');
    expect(delivered.length).toBeGreaterThanOrEqual(2);
    expect(new Set(delivered.map((d) => d.key))).toEqual(new Set([key]));
    expect(new Set(delivered.map((d) => d.header))).toEqual(new Set([key]));
    expect(log.of('refund.applied').filter((d) => d.args.order === 'o-crash')).toHaveLength(1);
    expect(run.output).toMatchObject({ structuredContent: { refunded: 'o-crash', refundId: 'rf-1' } });
  });
});
