import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/cli/metrics.js';

/*
 * docs/grafana/waymark.json charts what a waymark process exposes: every panel queries at least one
 * metric, and every metric a query names is one the Metrics registry (src/cli/metrics.ts, with the
 * default process metrics) really serves, so a renamed metric fails here rather than as an empty
 * panel in production.
 */

interface Panel { title: string; targets?: { expr: string }[] }

/** A histogram's series (_bucket, _sum, _count) belong to the metric without the suffix. */
function metricOf(series: string, known: Set<string>): string {
  if (known.has(series)) return series;
  return series.replace(/_(bucket|sum|count)$/, '');
}

describe('the Grafana dashboard', () => {
  it('queries only metrics a waymark process exposes, at least one per panel', async () => {
    const dashboard = JSON.parse(await readFile(path.resolve('docs/grafana/waymark.json'), 'utf8')) as { panels: Panel[] };
    const metrics = new Metrics();
    const known = new Set((await metrics.registry.getMetricsAsJSON()).map((m) => m.name));
    metrics.stop();
    expect(known.has('waymark_runs')).toBe(true);
    expect(dashboard.panels.length).toBeGreaterThan(10);
    const missing: string[] = [];
    for (const panel of dashboard.panels) {
      const names = (panel.targets ?? []).flatMap((t) => t.expr.match(/\bwaymark_[a-z0-9_]+/g) ?? []);
      expect(names.length, `panel "${panel.title}" queries no waymark metric`).toBeGreaterThan(0);
      for (const name of names) if (!known.has(metricOf(name, known))) missing.push(`${panel.title}: ${name}`);
    }
    expect(missing).toEqual([]);
  });
});
