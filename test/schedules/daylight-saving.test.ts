import { describe, expect, it } from 'vitest';
import { scheduleHarness } from './schedule-harness.js';

/*
 * Daylight saving in two time zones (docs/schedules.md "Daylight saving"), on an injected clock
 * walked an hour at a time through each change: a wall-clock time the change skips runs once, at
 * the end of the gap; a wall-clock time it repeats runs once, at its first occurrence; a schedule
 * whose hour is a wildcard keeps one tick per distinct instant. No tick twice, none silently lost.
 */

async function walkDay(zone: string, cron: string, from: string, hours: number): Promise<string[]> {
  const h = await scheduleHarness(from);
  await h.create({
    spec: { cron: [cron], intervals: [], timeZone: zone, startAt: null, endAt: null, jitterMs: 0, exclude: [] },
    policies: { overlap: 'ALLOW_ALL', catchupWindowMs: 3_600_000, pauseOnFailure: false, budgetPause: null },
  });
  await h.walk(hours * 4, 15 * 60_000);
  return h.scheduledTimes();
}

describe('daylight saving', () => {
  it('America/New_York, spring forward (2026-03-08, 02:00 -> 03:00): 02:30 runs once, at 03:00 EDT', async () => {
    expect(await walkDay('America/New_York', '30 2 * * *', '2026-03-07T00:00:00Z', 72)).toEqual([
      '2026-03-07T07:30:00.000Z', // 02:30 EST
      '2026-03-08T07:00:00.000Z', // the gap: 03:00 EDT
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
    ]);
  });

  it('America/New_York, fall back (2026-11-01, 02:00 -> 01:00): 01:30 runs once, at its first occurrence (EDT)', async () => {
    expect(await walkDay('America/New_York', '30 1 * * *', '2026-10-31T00:00:00Z', 72)).toEqual([
      '2026-10-31T05:30:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z',
    ]);
  });

  it('Europe/Berlin, spring forward (2026-03-29, 02:00 -> 03:00) and fall back (2026-10-25, 03:00 -> 02:00): 02:30 runs once each day', async () => {
    expect(await walkDay('Europe/Berlin', '30 2 * * *', '2026-03-28T00:00:00Z', 72)).toEqual([
      '2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z',
    ]);
    expect(await walkDay('Europe/Berlin', '30 2 * * *', '2026-10-24T00:00:00Z', 72)).toEqual([
      '2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z',
    ]);
  });

  it('Europe/Berlin, fall back with a wildcard hour: every 30 minutes of real time, each instant once', async () => {
    const times = await walkDay('Europe/Berlin', '*/30 * * * *', '2026-10-24T23:00:00Z', 4);
    // 23:00Z to 03:00Z crosses 03:00 CEST -> 02:00 CET at 01:00Z: 8 half hours, none dropped or doubled.
    expect(times).toEqual(Array.from({ length: 8 }, (_, i) => new Date(Date.parse('2026-10-24T23:00:00Z') + (i + 1) * 30 * 60_000).toISOString()));
    expect(new Set(times).size).toBe(times.length);
  });
});
