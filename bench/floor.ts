import pg from 'pg';
import { percentile, pool } from './stats.js';

/**
 * The physical floor: node + pg committing one single-row INSERT into a journal-shaped table,
 * autocommit, on 1 and on 8 connections. Nothing durable can be faster on this database.
 */
export async function measureFloor(url: string, connections: number, inserts: number): Promise<{ rowsPerSec: number; p50Ms: number; p99Ms: number }> {
  const p = new pg.Pool({ connectionString: url, max: connections });
  await p.query(`CREATE TABLE IF NOT EXISTS floor_journal (
    run_id uuid NOT NULL, seq int NOT NULL, kind text NOT NULL, name text NOT NULL, status text NOT NULL,
    payload jsonb, created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (run_id, seq))`);
  await p.query('TRUNCATE floor_journal');
  const runs = Array.from({ length: connections }, () => crypto.randomUUID());
  const latencies: number[] = [];
  const started = performance.now();
  await pool(inserts, connections, async (i) => {
    const t = performance.now();
    await p.query({
      name: 'floor_insert',
      text: 'INSERT INTO floor_journal (run_id, seq, kind, name, status, payload) VALUES ($1, $2, $3, $4, $5, $6)',
      values: [runs[i % connections], i, 'step', `step-${i % 10}`, 'ok', JSON.stringify({ value: i })],
    });
    latencies.push(performance.now() - t);
  });
  const seconds = (performance.now() - started) / 1000;
  await p.end();
  return { rowsPerSec: inserts / seconds, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}
