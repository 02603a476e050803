import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chaosEnv, Driver } from '../chaos/support/cluster.js';
import { EffectSink } from '../chaos/support/effect-sink.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * `waymark dev` runs a server, an executor and a sweeper in one process; `waymark sweeper` alone
 * follows while dev's sweeper leads. Both serve Prometheus metrics over plain HTTP/1.1.
 */

let db: TestDatabase;
let sink: EffectSink;
let driver: Driver;
const procs: WaymarkProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase('waymark_metrics');
  sink = await EffectSink.start();
});

afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop()));
  await driver?.close();
  await sink?.close();
  await db?.drop();
});

async function scrape(p: WaymarkProcess): Promise<string> {
  const line = await p.waitForLog((l) => typeof l.metricsAddress === 'string');
  const res = await fetch(`http://${String(line.metricsAddress)}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return res.text();
}

/** The value of one sample line (`name{labels} value`), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('metrics and the in-process sweeper of waymark dev', () => {
  it('dev executes and sweeps; a separate sweeper follows; both serve /metrics', async () => {
    const dev = WaymarkProcess.start(['dev'], { env: chaosEnv(db.url) });
    procs.push(dev);
    await dev.listening();
    await dev.waitForLog((l) => l.msg === 'sweeper leader lease acquired');
    const standby = WaymarkProcess.start(['sweeper'], { env: chaosEnv(db.url) });
    procs.push(standby);
    await standby.waitForLog((l) => l.msg === 'waymark sweeper started');

    driver = await Driver.open(db.url);
    const runId = await driver.start('chaos-pair', { sink: sink.url, tag: 'metrics' });
    await driver.waitEnded([runId], 60_000);
    expect((await driver.store.runGet({ runId, namespace: 'default' })).status).toBe('SUCCEEDED');

    const devMetrics = await scrape(dev);
    expect(sample(devMetrics, 'waymark_runs_claimed_total')).toBeGreaterThanOrEqual(1);
    expect(sample(devMetrics, 'waymark_executions_total{outcome="succeeded"}')).toBeGreaterThanOrEqual(1);
    expect(sample(devMetrics, 'waymark_journal_append_duration_seconds_count{method="journalAppend",outcome="ok"}')).toBeGreaterThanOrEqual(4);
    expect(sample(devMetrics, 'waymark_sweeper_leader')).toBe(1);
    expect(sample(devMetrics, 'waymark_sweep_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(devMetrics).toMatch(/^waymark_runs\{status="PENDING"\} \d+$/m);
    expect(devMetrics).toContain('# TYPE waymark_lease_losses_total counter');
    expect(devMetrics).toContain('# TYPE waymark_recoveries_total counter');

    const standbyMetrics = await scrape(standby);
    expect(sample(standbyMetrics, 'waymark_sweeper_leader')).toBe(0);
    expect(sample(standbyMetrics, 'waymark_sweep_duration_seconds_count')).toBe(0); // a follower does not sweep
    expect(standby.logs.some((l) => l.msg === 'sweep acted')).toBe(false);

    const notFound = await fetch(`http://${String((await dev.waitForLog((l) => typeof l.metricsAddress === 'string')).metricsAddress)}/other`);
    expect(notFound.status).toBe(404);
    expect((await dev.stop('SIGTERM')).code).toBe(0);
    expect((await standby.stop('SIGTERM')).code).toBe(0);
  }, 120_000);
});
