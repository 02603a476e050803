// schedules/: the spend of the runs a schedule started over its budget window (docs/schedules.md "Budget"), from the journal's priced entries.
// Must not keep a tally of its own: spend is folded from the journal, as a run's budget is (DESIGN "Agents").
import { SCHEDULE_ID_LABEL, type ScheduleRecord } from '../../journal/schedule.js';
import type { JournalStore } from '../../store/store.js';
import { MAX_SPEND_DEPTH, roundUsd } from '../read/spend.js';

/** Runs read per page while looking back over the window. */
const PAGE = 200;

/**
 * What the runs this schedule started within `budgetPause.windowMs` before `now` have spent, their
 * children included (the journal's cost totals over each run's tree). Runs are found by the schedule's
 * label, newest first, so the look stops at the first page that reaches past the window.
 */
export async function scheduleSpendOver(store: JournalStore, s: ScheduleRecord, now: Date): Promise<number> {
  const windowMs = s.policies.budgetPause?.windowMs ?? 0;
  const since = now.getTime() - windowMs;
  let total = 0;
  let cursor: string | null = null;
  do {
    const page = await store.runList({ namespace: s.namespace, labels: { [SCHEDULE_ID_LABEL]: s.id }, pageSize: PAGE, cursor });
    const inWindow = page.runs.filter((r) => r.createdAt.getTime() >= since);
    for (const run of inWindow) {
      const spend = await store.journalSpend({ runId: run.id, namespace: s.namespace, maxDepth: MAX_SPEND_DEPTH });
      total += spend.ownUsd + spend.childrenUsd;
    }
    cursor = inWindow.length === page.runs.length ? page.nextCursor : null;
  } while (cursor);
  return roundUsd(total);
}
