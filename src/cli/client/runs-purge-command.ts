import { create } from '@bufbuild/protobuf';
import { PurgeRunsResponseSchema, type PurgeRunsResponse, type RunStatusName } from '@waymark-dev/client';
import { call, list, str, type CommandSpec } from './command-spec.js';
import { EXIT, UsageError } from './exit-codes.js';
import { formatTime, millis, parseDuration } from './format.js';

/*
 * `waymark runs purge` (docs/operations.md "Purging runs"): deletes finished runs of the namespace
 * through PurgeRuns, call after call (each at most 1000 root runs, deleted by the server in short
 * batches) until none is left or --limit is reached; --dry-run counts instead, in one call.
 */

const FINISHED: RunStatusName[] = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
const PER_CALL = 1000;
const MAX_DRY = 10_000;

const purge: CommandSpec = {
  group: 'runs', name: 'purge', args: [],
  summary: 'Deletes finished runs that ended before --older-than, with their journals; --dry-run counts them.',
  details: [
    'Only runs that ended SUCCEEDED, FAILED or CANCELLED go, each with its child runs, journal, webhook',
    'deliveries, buffered signals and remote tasks; a pending, running or suspended run never does, nor',
    'a run with an unfinished child or a webhook delivery still pending. Their cost stays in the daily',
    'cost roll-up. The server deletes in batches of 50 root runs, one short transaction each, so writers',
    'are never held up. Needs an admin key. docs/operations.md "Purging runs".',
  ].join('\n'),
  options: {
    'older-than': { type: 'string', value: 'DURATION', help: 'required: only runs that ended at least this long ago (30d, 12h, 0s for all)' },
    status: { type: 'string', multiple: true, value: 'STATUS', help: `only runs that ended so (repeatable): ${FINISHED.join(', ')}` },
    workflow: { type: 'string', value: 'NAME', help: 'only runs of this workflow' },
    limit: { type: 'string', value: 'N', help: 'delete at most N root runs (default: every match; a dry run counts up to 10000)' },
    'dry-run': { type: 'boolean', help: 'count what would be deleted (runs, entries, oldest and newest end); delete nothing' },
  },
  examples: ['waymark runs purge --older-than 90d --dry-run', 'waymark runs purge --older-than 7d --status FAILED --workflow refund'],
  async run(inv) {
    const olderText = str(inv, 'older-than');
    if (olderText === undefined) throw new UsageError('--older-than is required: how long ago a run must have ended to go (e.g. 30d; 0s for every finished run)');
    const olderThanMs = parseDuration(olderText);
    if (olderThanMs === undefined) throw new UsageError(`--older-than must be a duration like 30d, 12h or 90m; got "${olderText}"`);
    const statuses = list(inv, 'status').map((s) => {
      const name = s.toUpperCase() as RunStatusName;
      if (!FINISHED.includes(name)) throw new UsageError(`--status must be one of ${FINISHED.join(', ')} (only finished runs are purged); got "${s}"`);
      return name;
    });
    const limitText = str(inv, 'limit');
    const limit = limitText === undefined ? undefined : Number(limitText);
    if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 1)) throw new UsageError(`--limit must be a whole number >= 1; got "${limitText}"`);
    const dryRun = inv.values['dry-run'] === true;
    const client = inv.client();
    const filter = { ...call(inv), olderThanMs, statuses, workflow: str(inv, 'workflow'), dryRun };
    const total = create(PurgeRunsResponseSchema, { dryRun });
    for (;;) {
      const remaining = limit === undefined ? Infinity : limit - Number(total.rootRuns);
      const r = await client.purgeRuns({ ...filter, limit: Math.min(remaining, dryRun ? MAX_DRY : PER_CALL) });
      add(total, r);
      total.more = r.more;
      // A dry run deletes nothing, so a second call would count the same runs again.
      if (dryRun || !r.more || r.rootRuns === 0n || remaining - Number(r.rootRuns) <= 0) break;
    }
    if (inv.out.json) {
      inv.out.jsonLine(PurgeRunsResponseSchema, total);
      return EXIT.ok;
    }
    const runs = `${total.runs} run${total.runs === 1n ? '' : 's'} (${total.rootRuns} root run${total.rootRuns === 1n ? '' : 's'} and their children), ${total.entries} journal entries`;
    const span = total.oldestEndTime ? `; ended ${formatTime(total.oldestEndTime)} to ${formatTime(total.newestEndTime)}` : '';
    inv.out.print(dryRun ? `would delete ${total.more ? 'at least ' : ''}${runs}${span} (dry run: nothing was deleted)` : `deleted ${runs}${span}`);
    if (total.more) inv.out.note(dryRun ? `more runs match than one dry run counts (${MAX_DRY} root runs)` : `stopped at --limit ${limit}: more runs match`);
    return EXIT.ok;
  },
};

function add(total: PurgeRunsResponse, r: PurgeRunsResponse): void {
  total.rootRuns += r.rootRuns;
  total.runs += r.runs;
  total.entries += r.entries;
  if (r.oldestEndTime && (!total.oldestEndTime || millis(r.oldestEndTime)! < millis(total.oldestEndTime)!)) total.oldestEndTime = r.oldestEndTime;
  if (r.newestEndTime && (!total.newestEndTime || millis(r.newestEndTime)! > millis(total.newestEndTime)!)) total.newestEndTime = r.newestEndTime;
}

export const PURGE_COMMANDS: CommandSpec[] = [purge];
