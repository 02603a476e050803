import type { Duration } from '@bufbuild/protobuf/wkt';
import {
  BackfillScheduleResponseSchema, overlapPolicyName, ScheduleActionCause, ScheduleSchema,
  type OverlapPolicyName, type Schedule, type ScheduleDefinition,
} from '@waymark-dev/client';
import { call, list, str, type CommandSpec, type Invocation, type OptionSpec } from './command-spec.js';
import { EXIT } from './exit-codes.js';
import { fields, formatDuration, formatLabels, formatTime, formatValue, parseDuration, table } from './format.js';
import { readJsonArg, readPairs } from './json-input.js';
import { headerBold } from './runs-commands.js';
import { UsageError } from './usage-error.js';

/* `waymark schedules create|get|list|update|pause|unpause|trigger|backfill|delete` (ScheduleService, docs/schedules.md). */

const OVERLAPS: OverlapPolicyName[] = ['SKIP', 'BUFFER_ONE', 'BUFFER_ALL', 'CANCEL_OTHER', 'TERMINATE_OTHER', 'ALLOW_ALL'];
const CAUSES: Record<number, string> = { [ScheduleActionCause.TICK]: 'tick', [ScheduleActionCause.TRIGGER]: 'trigger', [ScheduleActionCause.BACKFILL]: 'backfill' };

/** The options of create and update: each names one field of the definition. */
const DEFINITION_OPTIONS: Record<string, OptionSpec> = {
  workflow: { type: 'string', value: 'NAME', help: 'the workflow or flow each tick starts' },
  input: { type: 'string', value: 'JSON|@FILE|-', help: 'its input (default: null)' },
  cron: { type: 'string', multiple: true, value: 'EXPR', help: 'a cron expression of 5 fields, or 6 with seconds first; "TZ=Zone " may prefix it (repeatable)' },
  every: { type: 'string', multiple: true, value: 'DURATION[+OFFSET]', help: 'an interval from the Unix epoch, e.g. 1h, 15m+5m (repeatable)' },
  'time-zone': { type: 'string', value: 'ZONE', help: 'IANA zone of the cron expressions, e.g. Europe/Berlin (default UTC)' },
  start: { type: 'string', value: 'TIME', help: 'no tick before this RFC 3339 time' },
  end: { type: 'string', value: 'TIME', help: 'no tick after this RFC 3339 time' },
  jitter: { type: 'string', value: 'DURATION', help: 'each run starts up to this much after its tick' },
  exclude: { type: 'string', multiple: true, value: 'EXPR', help: 'a cron expression whose ticks are skipped (repeatable)' },
  label: { type: 'string', multiple: true, value: 'K=V', help: 'a label on every run (repeatable)' },
  budget: { type: 'string', value: 'USD', help: "each run's spending cap for model calls" },
  'run-timeout': { type: 'string', value: 'DURATION', help: "each run's timeout (default the workflow's)" },
  overlap: { type: 'string', value: 'POLICY', help: `while a run is open: ${OVERLAPS.join(', ')} (default SKIP)` },
  'catchup-window': { type: 'string', value: 'DURATION', help: 'a tick found later than this is counted missed, not run (default 1m)' },
  'pause-on-failure': { type: 'boolean', help: 'pause when a run of the schedule fails' },
  'budget-pause': { type: 'string', value: 'USD/DURATION', help: 'pause when its runs spend more than USD within DURATION, e.g. 5/24h' },
  remaining: { type: 'string', value: 'N|unlimited', help: 'how many more ticks it takes (default unlimited)' },
};

const ms = (d: Duration | undefined): number => (d === undefined ? 0 : Number(d.seconds) * 1000 + Math.round(d.nanos / 1e6));

function duration(flag: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined) throw new UsageError(`--${flag} takes a duration such as 30s, 15m, 1h30m or 2d; got "${text}"`);
  return ms;
}

function time(flag: string, text: string): Date {
  const ms = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(ms)) throw new UsageError(`--${flag} takes an RFC 3339 time such as 2026-01-01T00:00:00Z; got "${text}"`);
  return new Date(ms);
}

function overlapOf(text: string): OverlapPolicyName {
  const name = text.toUpperCase().replaceAll('-', '_') as OverlapPolicyName;
  if (!OVERLAPS.includes(name)) throw new UsageError(`--overlap must be one of ${OVERLAPS.join(', ')}; got "${text}"`);
  return name;
}

/** The fields the command line names (only those: an update keeps the rest). */
function definitionOf(inv: Invocation): Partial<ScheduleDefinition> {
  const d: Partial<ScheduleDefinition> = {};
  const workflow = str(inv, 'workflow');
  if (workflow !== undefined) d.workflow = workflow;
  const input = str(inv, 'input');
  if (input !== undefined) d.input = readJsonArg('input', input);
  if (list(inv, 'cron').length > 0) d.cron = list(inv, 'cron');
  if (list(inv, 'every').length > 0) {
    d.intervals = list(inv, 'every').map((e) => {
      const [every, offset] = e.split('+', 2) as [string, string | undefined];
      return { everyMs: duration('every', every), offsetMs: offset === undefined ? undefined : duration('every', offset) };
    });
  }
  const zone = str(inv, 'time-zone');
  if (zone !== undefined) d.timeZone = zone;
  const start = str(inv, 'start');
  if (start !== undefined) d.startAt = time('start', start);
  const end = str(inv, 'end');
  if (end !== undefined) d.endAt = time('end', end);
  const jitter = str(inv, 'jitter');
  if (jitter !== undefined) d.jitterMs = duration('jitter', jitter);
  if (list(inv, 'exclude').length > 0) d.exclude = list(inv, 'exclude');
  if (list(inv, 'label').length > 0) d.labels = readPairs('label', list(inv, 'label'));
  const budget = str(inv, 'budget');
  if (budget !== undefined) {
    if (!/^\d+(\.\d+)?$/.test(budget)) throw new UsageError(`--budget takes US dollars such as 2.50; got "${budget}"`);
    d.budgetUsd = Number(budget);
  }
  const timeout = str(inv, 'run-timeout');
  if (timeout !== undefined) d.runTimeoutMs = duration('run-timeout', timeout);
  const overlap = str(inv, 'overlap');
  if (overlap !== undefined) d.overlap = overlapOf(overlap);
  const catchup = str(inv, 'catchup-window');
  if (catchup !== undefined) d.catchupWindowMs = duration('catchup-window', catchup);
  if (inv.values['pause-on-failure'] === true) d.pauseOnFailure = true;
  const budgetPause = str(inv, 'budget-pause');
  if (budgetPause !== undefined) {
    const m = /^(\d+(?:\.\d+)?)\/(.+)$/.exec(budgetPause);
    if (!m) throw new UsageError(`--budget-pause takes USD/DURATION such as 5/24h; got "${budgetPause}"`);
    d.budgetPause = { limitUsd: Number(m[1]), windowMs: duration('budget-pause', m[2]!) };
  }
  const remaining = str(inv, 'remaining');
  if (remaining !== undefined) {
    if (remaining !== 'unlimited' && !/^\d+$/.test(remaining)) throw new UsageError(`--remaining takes a whole number or "unlimited"; got "${remaining}"`);
    d.remainingActions = remaining === 'unlimited' ? undefined : Number(remaining);
  }
  return d;
}

/** When a schedule ticks, in one line: `cron 0 3 * * * (Europe/Berlin), every 1h`. */
function specText(s: Schedule): string {
  const spec = s.spec;
  const parts = [
    ...(spec?.cron ?? []).map((c) => `cron ${c}`),
    ...(spec?.intervals ?? []).map((iv) => `every ${formatDuration(ms(iv.every))}${iv.offset ? `+${formatDuration(ms(iv.offset))}` : ''}`),
  ];
  return `${parts.join(', ') || '-'}${spec?.cron.length && spec.timeZone !== 'UTC' ? ` (${spec.timeZone})` : ''}`;
}

function stateText(s: Schedule): string {
  if (s.paused) return 'paused';
  return s.remainingActions === 0n ? 'done' : 'active';
}

/** The key-value view of one schedule, then its recent actions and next times. */
function scheduleText(inv: Invocation, s: Schedule): string {
  const info = s.info;
  const a = s.action;
  const p = s.policies;
  const pairs: Array<[string, string]> = [
    ['schedule', s.id],
    ['state', `${stateText(s)}${s.note ? ` (${s.note})` : ''}`],
    ['spec', specText(s)],
    ['workflow', a?.workflow ?? '-'],
    ['input', formatValue(a?.input)],
  ];
  if (a && Object.keys(a.labels).length > 0) pairs.push(['labels', formatLabels(a.labels)]);
  if (s.spec?.startTime || s.spec?.endTime) pairs.push(['between', `${formatTime(s.spec.startTime)} and ${formatTime(s.spec.endTime)}`]);
  if (s.spec?.exclude.length) pairs.push(['except', s.spec.exclude.join(', ')]);
  pairs.push(['overlap', `${overlapPolicyName(p?.overlap ?? 0)}, catch-up window ${formatDuration(ms(p?.catchupWindow))}${p?.pauseOnFailure ? ', pause on failure' : ''}`]);
  if (p?.budgetPause) pairs.push(['budget pause', `over $${p.budgetPause.limitUsd} within ${formatDuration(ms(p.budgetPause.window))}`]);
  if (s.remainingActions !== undefined) pairs.push(['remaining', String(s.remainingActions)]);
  pairs.push(['actions', `${info?.actionCount ?? 0n} started, ${info?.overlapSkipped ?? 0n} skipped (overlap), ${info?.missedCatchupWindow ?? 0n} missed (catch-up window)${info?.bufferedActions ? `, ${info.bufferedActions} queued` : ''}`]);
  if (info?.runningRunIds.length) pairs.push(['running', info.runningRunIds.join(', ')]);
  let text = fields(pairs, (k) => inv.out.paint(k, 'bold'));
  const recent = info?.recentActions ?? [];
  if (recent.length > 0) {
    const rows = recent.map((r) => [formatTime(r.scheduleTime), formatTime(r.actualTime), CAUSES[r.cause] ?? '?', r.runId]);
    text += `\n${table(['SCHEDULED', 'STARTED', 'CAUSE', 'RUN'], rows, headerBold(inv.out))}`;
  }
  const next = info?.futureActionTimes ?? [];
  text += `\n${inv.out.paint('next', 'bold')}  ${next.length === 0 ? 'none' : next.map((t) => formatTime(t)).join(' ')}\n`;
  return text;
}

function printSchedule(inv: Invocation, s: Schedule, verb?: string): number {
  if (inv.out.json) inv.out.jsonLine(ScheduleSchema, s);
  else inv.out.print(verb ? `schedule ${s.id} ${verb}` : scheduleText(inv, s).trimEnd());
  return EXIT.ok;
}

const note: Record<string, OptionSpec> = { note: { type: 'string', value: 'TEXT', help: 'why, and by whom (shown as the schedule\'s note)' } };
const overlapOption: Record<string, OptionSpec> = { overlap: { type: 'string', value: 'POLICY', help: `the overlap policy of these starts (default the schedule's): ${OVERLAPS.join(', ')}` } };

const create: CommandSpec = {
  group: 'schedules', name: 'create', args: ['<schedule>'],
  summary: 'Creates a schedule that starts runs of a workflow on a calendar: cron expressions (--cron) or intervals (--every).',
  details: 'Exactly one run per tick, whatever crashes; each run carries the labels waymark.schedule_id and waymark.scheduled_at (docs/schedules.md).',
  options: { ...DEFINITION_OPTIONS, paused: { type: 'boolean', help: 'create it paused' }, ...note },
  examples: [
    "waymark schedules create nightly-refunds --workflow refund --input '{\"order\":\"A-1\",\"amount\":5}' --cron '0 3 * * *' --time-zone Europe/Berlin",
    'waymark schedules create heartbeat --workflow echo --every 10m --overlap buffer_one --catchup-window 5m',
  ],
  async run(inv) {
    const [id] = inv.args as [string];
    const d = definitionOf(inv);
    if (d.workflow === undefined) throw new UsageError('--workflow is required: the workflow or flow each tick starts');
    if (d.cron === undefined && d.intervals === undefined) throw new UsageError('give --cron or --every (or both): when the schedule ticks');
    const s = await inv.client().createSchedule(id, { ...d, workflow: d.workflow, paused: inv.values.paused === true, note: str(inv, 'note') }, call(inv));
    if (inv.out.json) return printSchedule(inv, s);
    const next = s.info?.futureActionTimes[0];
    inv.out.print(`schedule ${s.id} created${s.paused ? ' (paused)' : ''}; next tick ${next ? formatTime(next) : 'none'}`);
    return EXIT.ok;
  },
};

const get: CommandSpec = {
  group: 'schedules', name: 'get', args: ['<schedule>'],
  summary: 'Shows a schedule: its spec, workflow, policies, counters, recent actions and next ten times.',
  options: {},
  examples: ['waymark schedules get nightly-refunds', 'waymark schedules get nightly-refunds -o json | jq .info.futureActionTimes'],
  async run(inv) {
    return printSchedule(inv, await inv.client().getSchedule(inv.args[0]!, call(inv)));
  },
};

const ls: CommandSpec = {
  group: 'schedules', name: 'list', args: [],
  summary: 'Lists the schedules of the namespace by id, each with its next time and last action.',
  options: {},
  examples: ['waymark schedules list', 'waymark schedules list -o json | jq -r .id'],
  async run(inv) {
    const rows: string[][] = [];
    for await (const s of inv.client().listSchedules({ ...call(inv), pageSize: 100 })) {
      if (inv.out.json) {
        inv.out.jsonLine(ScheduleSchema, s);
        continue;
      }
      const last = s.info?.recentActions.at(-1);
      rows.push([s.id, s.action?.workflow ?? '-', specText(s), stateText(s), formatTime(s.info?.futureActionTimes[0]), String(s.info?.actionCount ?? 0n), last ? formatTime(last.scheduleTime) : '-']);
    }
    if (!inv.out.json) inv.out.print(rows.length === 0 ? 'no schedules' : table(['SCHEDULE', 'WORKFLOW', 'SPEC', 'STATE', 'NEXT', 'ACTIONS', 'LAST'], rows, headerBold(inv.out)));
    return EXIT.ok;
  },
};

const update: CommandSpec = {
  group: 'schedules', name: 'update', args: ['<schedule>'],
  summary: 'Changes the fields given and keeps the rest (e.g. --time-zone alone keeps the cron expressions); a new spec ticks from now on.',
  details: '--cron, --every, --exclude and --label replace the whole list they name. --remaining unlimited clears the limit; --no-pause-on-failure turns pause on failure off.',
  options: { ...DEFINITION_OPTIONS, 'no-pause-on-failure': { type: 'boolean', help: 'turn pause on failure off' } },
  examples: ["waymark schedules update nightly-refunds --cron '30 2 * * *'", 'waymark schedules update heartbeat --overlap allow_all --remaining 10'],
  async run(inv) {
    const changes = definitionOf(inv);
    if (inv.values['no-pause-on-failure'] === true) changes.pauseOnFailure = false;
    if (Object.keys(changes).length === 0) throw new UsageError('nothing to update: give an option of the schedule (see waymark schedules update --help)');
    return printSchedule(inv, await inv.client().updateSchedule(inv.args[0]!, changes, call(inv)), 'updated');
  },
};

const pause: CommandSpec = {
  group: 'schedules', name: 'pause', args: ['<schedule>'],
  summary: 'Pauses a schedule: no ticks, and triggers and backfills wait, until it is unpaused.',
  options: note,
  examples: ["waymark schedules pause nightly-refunds --note 'ledger migration (ann)'"],
  async run(inv) {
    return printSchedule(inv, await inv.client().pauseSchedule(inv.args[0]!, { ...call(inv), note: str(inv, 'note') }), 'paused');
  },
};

const unpause: CommandSpec = {
  group: 'schedules', name: 'unpause', args: ['<schedule>'],
  summary: 'Unpauses a schedule; ticks that fell while it was paused are not caught up.',
  options: note,
  examples: ['waymark schedules unpause nightly-refunds'],
  async run(inv) {
    return printSchedule(inv, await inv.client().unpauseSchedule(inv.args[0]!, { ...call(inv), note: str(inv, 'note') }), 'unpaused');
  },
};

const trigger: CommandSpec = {
  group: 'schedules', name: 'trigger', args: ['<schedule>'],
  summary: 'Starts one run now (scheduled at the current time); the sweeper starts it within about a second.',
  options: overlapOption,
  examples: ['waymark schedules trigger nightly-refunds --overlap allow_all'],
  async run(inv) {
    const overlap = str(inv, 'overlap');
    return printSchedule(inv, await inv.client().triggerSchedule(inv.args[0]!, { ...call(inv), overlap: overlap === undefined ? undefined : overlapOf(overlap) }), 'triggered');
  },
};

const backfill: CommandSpec = {
  group: 'schedules', name: 'backfill', args: ['<schedule>'],
  summary: 'Starts a run for every tick between --start and --end (at most 1,000); a time that already ran is not run again.',
  options: {
    start: { type: 'string', value: 'TIME', help: 'the first time of the range (RFC 3339, inclusive)' },
    end: { type: 'string', value: 'TIME', help: 'the last time of the range (RFC 3339, inclusive)' },
    ...overlapOption,
  },
  examples: ['waymark schedules backfill nightly-refunds --start 2026-01-01T00:00:00Z --end 2026-01-07T23:59:59Z'],
  async run(inv) {
    const start = str(inv, 'start');
    const end = str(inv, 'end');
    if (start === undefined || end === undefined) throw new UsageError('--start and --end are required: the range of ticks to run');
    const overlap = str(inv, 'overlap');
    const r = await inv.client().backfillSchedule(inv.args[0]!, time('start', start), time('end', end), { ...call(inv), overlap: overlap === undefined ? undefined : overlapOf(overlap) });
    if (inv.out.json) inv.out.jsonLine(BackfillScheduleResponseSchema, { $typeName: 'waymark.v1.BackfillScheduleResponse', schedule: r.schedule, queued: r.queued });
    else inv.out.print(`schedule ${r.schedule.id}: ${r.queued} tick${r.queued === 1 ? '' : 's'} queued`);
    return EXIT.ok;
  },
};

const remove: CommandSpec = {
  group: 'schedules', name: 'delete', args: ['<schedule>'],
  summary: 'Deletes a schedule (exit 3 when there is none); the runs it started are kept.',
  options: {},
  examples: ['waymark schedules delete nightly-refunds'],
  async run(inv) {
    await inv.client().deleteSchedule(inv.args[0]!, call(inv));
    if (!inv.out.json) inv.out.print(`schedule ${inv.args[0]!} deleted`);
    return EXIT.ok;
  },
};

export const SCHEDULES_COMMANDS: CommandSpec[] = [create, get, ls, update, pause, unpause, trigger, backfill, remove];
