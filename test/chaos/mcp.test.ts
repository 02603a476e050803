import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { until } from '../support/until.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { deliveriesLog, startHttpMcpServer, startTaskMcpServer } from '../mcp/mcp-fixture.js';
import { chaosEnv, Driver, kill, NS, startServer, startSweeper } from './support/cluster.js';

/*
 * An MCP tool call across real processes (docs/mcp.md "What a run records"): a replica is
 * SIGKILLed while the counting MCP server (test/mcp/fixtures/counting-mcp-server.mjs, Streamable
 * HTTP, its own process) holds the call. Another replica continues the run: it sends the call again
 * with the same idempotency key, the server applies it once, and the journal holds one pin, one
 * intent and one result. The same with an MCP task (docs/mcp.md "Tasks"): the replica is killed
 * while it awaits the task the call created, and the next one awaits that same task instead of
 * calling the tool again.
 */

describe('an MCP call whose replica is SIGKILLed', () => {
  const log = deliveriesLog();
  let db: TestDatabase | undefined;
  let driver: Driver | undefined;
  let sweeper: WaymarkProcess | undefined;
  let mcp: Awaited<ReturnType<typeof startHttpMcpServer>> | undefined;
  let tasks: Awaited<ReturnType<typeof startTaskMcpServer>> | undefined;
  const release = mkdtempSync(path.join(tmpdir(), 'waymark-chaos-release-'));
  const replicas: WaymarkProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('waymark_chaos_mcp');
    mcp = await startHttpMcpServer(log.file);
    tasks = await startTaskMcpServer(log.file, release);
    sweeper = await startSweeper(chaosEnv(db.url));
    driver = await Driver.open(db.url);
    await driver.store.mcpServerPut({ namespace: NS, name: 'shop', transport: { kind: 'http', url: mcp.url, headers: {} }, tools: {} });
    await driver.store.mcpServerPut({ namespace: NS, name: 'tasks', transport: { kind: 'http', url: tasks.url, headers: {} }, tools: {} });
  }, 120_000);
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await sweeper?.stop();
    await driver?.close();
    await mcp?.stop();
    await tasks?.stop();
    await db?.drop();
    log.remove();
    rmSync(release, { recursive: true, force: true });
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

  it('a replica killed while it awaits an MCP task: the next one awaits the same task, the tool is called once', { timeout: 300_000 }, async () => {
    // One replica at a time, so the one killed is the one awaiting (the previous test's survivor stops first).
    await Promise.all(replicas.splice(0).map((r) => r.stop()));
    const first = await startServer(chaosEnv(db!.url));
    replicas.push(first);
    const runId = await driver!.start('chaos-mcp-task', { order: 'o-task-crash' });
    const created = await until('the task created', () => log.of('slow_refund').find((d) => d.args.order === 'o-task-crash'), 120_000);
    // The replica awaits the task (its handle is journaled before the await starts): kill it now.
    await until('the first await', () => log.of('tasks/result').find((d) => d.taskId === created.taskId), 120_000);
    await kill(first);
    replicas.push(await startServer(chaosEnv(db!.url)));
    await until('the next replica awaiting the same task', () => (log.of('tasks/result').filter((d) => d.taskId === created.taskId).length >= 2 ? true : undefined), 180_000);
    writeFileSync(path.join(release, 'o-task-crash'), '');
    await driver!.waitEnded([runId], 180_000);
    const run = await driver!.store.runGet({ runId, namespace: NS });
    expect(run.status).toBe('SUCCEEDED');
    expect(run.output).toMatchObject({ structuredContent: { refunded: 'o-task-crash', taskId: created.taskId } });
    const entries = (await driver!.store.journalList({ runId })).filter((e) => e.kind !== 'status');
    const intents = entries.filter((e) => e.kind === 'tool' && e.status === 'running');
    expect(intents).toHaveLength(1);
    expect(entries.filter((e) => e.kind === 'tool' && e.status === 'ok').map((e) => e.payload)).toEqual([{ mcpTask: { taskId: created.taskId, status: 'working' } }]);
    expect(entries.filter((e) => e.name === 'mcp:tasks:tasks/result' && e.status === 'ok')).toHaveLength(1);
    // The server counts tools/call deliveries per idempotency key: one.
    const delivered = log.of('slow_refund').filter((d) => d.args.order === 'o-task-crash');
    expect(delivered.map((d) => d.key)).toEqual([intents[0]!.idempotencyKey]);
    expect(log.of('slow_refund.applied').filter((d) => d.args.order === 'o-task-crash')).toHaveLength(1);
  });
});
