import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import {
  GetRunResponseSchema, JournalEntrySchema, ResumeOutcome, ResumePreviewSchema, ResumeRunResponseSchema, RunEventSchema, RunProvenanceSchema,
  RunSchema, RunStatus, StartRunResponseSchema, toRunStatus, type JournalEntry, type Run, type RunProvenance, type RunStatusName, type WaitingOn,
} from '@waymark-dev/client';
import { call, list, str, type CommandSpec } from './command-spec.js';
import { errorMessage, EXIT, exitCodeOf, UsageError } from './exit-codes.js';
import { followRun, stoppedFollowing } from './follow.js';
import { startWait, waitForOf } from './start-wait.js';
import { clip, fields, formatDuration, formatLabels, formatTime, formatUsd, formatValue, millis, table } from './format.js';
import { readJsonArg, readPairs } from './json-input.js';
import type { Output } from './output.js';
import { entryDetail, entryStatusText, eventLine, resolvedBy, runStatusText } from './run-text.js';

/* `waymark runs …`: start, inspect, follow, resume and cancel runs. */

const RUN_STATUSES: RunStatusName[] = ['PENDING', 'RUNNING', 'SUSPENDED', 'SUCCEEDED', 'FAILED', 'CANCELLED'];


export function seqArg(flag: string, text: string): bigint {
  if (!/^\d{1,18}$/.test(text)) throw new UsageError(`--${flag} must be a journal seq (a whole number >= 0); got "${text}"`);
  return BigInt(text);
}

/** The key-value view of one run (`runs get`, `runs start`, `runs cancel`). */
export function runFields(out: Output, run: Run, waitingOn: WaitingOn[], extra: Array<[string, string]> = []): string {
  const pairs: Array<[string, string]> = [
    ['run', run.id],
    ['workflow', `${run.workflowName} (version ${run.workflowVersion}, digest ${run.workflowDigest.slice(0, 12)})`],
    ['status', runStatusText(out, run.status)],
    ...extra,
    ['created', formatTime(run.createTime)],
    ['updated', formatTime(run.updateTime)],
    ['input', formatValue(run.input)],
  ];
  if (run.status === RunStatus.SUCCEEDED) pairs.push(['output', formatValue(run.output)]);
  if (run.error) pairs.push(['error', `${run.error.name}: ${run.error.message}${run.error.reason ? ` (${run.error.reason})` : ''}`]);
  if (Object.keys(run.labels).length > 0) pairs.push(['labels', formatLabels(run.labels)]);
  // A run a schedule started (docs/schedules.md "What a run records").
  const schedule = run.labels['waymark.schedule_id'];
  if (schedule) pairs.push(['schedule', `${schedule}, scheduled at ${run.labels['waymark.scheduled_at'] ?? '?'} (waymark schedules get ${schedule})`]);
  if (run.budgetUsd !== undefined || run.spentUsd > 0) pairs.push(['spend', `${formatUsd(run.spentUsd)}${run.budgetUsd !== undefined ? ` of a ${formatUsd(run.budgetUsd)} budget` : ''}`]);
  if (run.parentRunId) pairs.push(['parent', run.parentRunId]);
  if (run.dryRun) pairs.push(['dry run', 'yes: mutating tools are not executed']);
  if (run.idempotencyKey && !run.idempotencyKey.startsWith('client:')) pairs.push(['idempotency key', run.idempotencyKey]);
  for (const w of waitingOn) {
    const deadline = w.deadline ? `, deadline ${formatTime(w.deadline)}` : '';
    pairs.push(['waiting on', `${w.kind} "${w.name}" (seq ${w.seq}${deadline})`]);
    // What it waits for, when the server says: no worker serves the tool, a retry's backoff.
    if (w.detail) pairs.push(['', w.detail]);
    if (w.approvalId) pairs.push(['', out.paint(`decide: waymark approvals complete ${w.approvalId} --decision approve|deny --by NAME`, 'dim')]);
    else if (w.kind === 'signal') pairs.push(['', out.paint(`deliver: waymark signals send ${run.id} ${w.name} --payload JSON`, 'dim')]);
  }
  return fields(pairs, (k) => out.paint(k, 'bold'));
}

const start: CommandSpec = {
  group: 'runs', name: 'start', args: ['<workflow>'],
  summary: 'Starts a run of a registered workflow (see waymark workflows list) and prints it.',
  details: [
    'With --wait it waits until the run ends or needs something from outside (an approval or a signal),',
    'showing its status, current step and elapsed time; timers, retry backoffs, remote tool calls and',
    'child runs are waited through, each park a line on stderr saying what the run waits on.',
    '--wait-for first-park stops at the first park of any kind (what --wait did before), --wait-for end',
    'only when the run ended. The exit status is 7 when the run FAILED or was CANCELLED.',
    'Ctrl-C stops waiting and leaves the run as it is.',
  ].join('\n'),
  options: {
    input: { type: 'string', value: 'JSON|@FILE|-', help: 'the input: JSON, @file for a file, - for standard input (omitted: null)' },
    wait: { type: 'boolean', help: 'wait until the run ends or waits on an approval or a signal, with progress' },
    'wait-for': { type: 'string', value: 'first-park|outside-input|end', help: 'what --wait waits for (implies --wait; default outside-input)' },
    'idempotency-key': { type: 'string', value: 'KEY', help: 'a repeat with the same key returns the first run instead of starting another' },
    budget: { type: 'string', value: 'USD', help: 'spending cap for model calls, in US dollars' },
    label: { type: 'string', multiple: true, value: 'K=V', help: 'a label on the run (repeatable)' },
    'dry-run': { type: 'boolean', help: 'a dry run: tools declared mutating are not executed' },
  },
  examples: [
    `waymark runs start refund --input '{"order":"A-1","amount":12.5}' --wait`,
    'waymark runs start refund --input @order.json --label team=billing --idempotency-key order-A-1 -o json',
  ],
  async run(inv) {
    const [workflow] = inv.args as [string];
    const raw = str(inv, 'input');
    const input = raw === undefined ? undefined : readJsonArg('input', raw);
    const budgetText = str(inv, 'budget');
    const budgetUsd = budgetText === undefined ? undefined : Number(budgetText);
    if (budgetUsd !== undefined && !(Number.isFinite(budgetUsd) && budgetUsd > 0)) throw new UsageError(`--budget must be a positive amount of US dollars; got "${budgetText}"`);
    const labels = readPairs('label', list(inv, 'label'));
    const waitFor = waitForOf(inv.values.wait === true, str(inv, 'wait-for'));
    const client = inv.client();
    // Waiting asks again with the start's key, so the key is chosen here (as the client would).
    const idempotencyKey = str(inv, 'idempotency-key') ?? (waitFor ? `client:${randomUUID()}` : undefined);
    const options = { idempotencyKey, labels, budgetUsd, dryRun: inv.values['dry-run'] === true };
    const started = await client.startRun(workflow, input, { ...call(inv), ...options }).catch((err: unknown) => {
      // A workflow that takes an input, started without one: say so, not only what null fails.
      if (raw === undefined && exitCodeOf(err) === EXIT.invalidInput) throw new UsageError(`no --input was given, and ${errorMessage(err, '')}`);
      throw err;
    });
    let { run, waitingOn, waitComplete } = started;
    if (waitFor) {
      const plain = !inv.out.json && !inv.out.terminal;
      if (plain) inv.out.print(`started run ${run.id}${started.created ? '' : ' (an earlier start with this idempotency key)'}`);
      const waited = await startWait(inv, {
        run, waitFor, onEvent: plain ? (e) => inv.out.print(eventLine(inv.out, e)) : undefined,
        wait: (signal) => client.startRun(workflow, input, { ...options, waitFor, signal }),
      });
      if (!waited.answer) {
        inv.out.note(stoppedFollowing(run.id, waited.status));
        return EXIT.interrupted;
      }
      ({ run, waitingOn, waitComplete } = waited.answer);
    }
    if (inv.out.json) inv.out.jsonLine(StartRunResponseSchema, create(StartRunResponseSchema, { run, created: started.created, waitingOn, waitComplete }));
    else inv.out.print(runFields(inv.out, run, waitingOn, [['created now', started.created ? 'yes' : 'no: an earlier start with this idempotency key']]));
    const failed = run.status === RunStatus.FAILED || run.status === RunStatus.CANCELLED;
    return waitFor && failed ? EXIT.runFailed : EXIT.ok;
  },
};

const get: CommandSpec = {
  group: 'runs', name: 'get', args: ['<run>'],
  summary: 'Prints one run: status, input, output or error, spend, and what it waits for.',
  options: {},
  examples: ['waymark runs get 01a23172-033b-7f93-91d6-20d4a94c98dd'],
  async run(inv) {
    const { run, waitingOn, forks } = await inv.client().getRun(inv.args[0]!, call(inv));
    if (inv.out.json) inv.out.jsonLine(GetRunResponseSchema, create(GetRunResponseSchema, { run, waitingOn, forks }));
    else inv.out.print(runFields(inv.out, run, waitingOn, forks.length > 0 ? [['forks', forks.join(', ')]] : []));
    return EXIT.ok;
  },
};

const listRuns: CommandSpec = {
  group: 'runs', name: 'list', args: [],
  summary: 'Lists runs, newest first, fetching pages as needed.',
  options: {
    status: { type: 'string', multiple: true, value: 'STATUS', help: `only runs in this status (repeatable): ${RUN_STATUSES.join(', ')}` },
    workflow: { type: 'string', value: 'NAME', help: 'only runs of this workflow' },
    label: { type: 'string', multiple: true, value: 'K=V', help: 'only runs carrying this label (repeatable: all must match)' },
    schedule: { type: 'string', value: 'ID', help: 'only runs this schedule started (the label waymark.schedule_id)' },
    limit: { type: 'string', value: 'N', help: 'at most N runs (default 50; 0 for all)' },
  },
  examples: ['waymark runs list --status SUSPENDED --workflow refund', 'waymark runs list --label team=billing -o json | jq -r .id', 'waymark runs list --schedule nightly-refunds'],
  async run(inv) {
    const statuses = list(inv, 'status').map((s) => {
      const name = s.toUpperCase();
      if (!RUN_STATUSES.includes(name as RunStatusName)) throw new UsageError(`--status must be one of ${RUN_STATUSES.join(', ')}; got "${s}"`);
      return toRunStatus(name as RunStatusName);
    });
    const limitText = str(inv, 'limit') ?? '50';
    if (!/^\d+$/.test(limitText)) throw new UsageError(`--limit must be a whole number (0 for all); got "${limitText}"`);
    const limit = Number(limitText) || Infinity;
    const labels = readPairs('label', list(inv, 'label'));
    const schedule = str(inv, 'schedule');
    if (schedule !== undefined) labels['waymark.schedule_id'] = schedule;
    const runs: Run[] = [];
    let more = false;
    for await (const run of inv.client().listRuns({ ...call(inv), statuses, workflow: str(inv, 'workflow'), labels, pageSize: Math.min(limit, 100) })) {
      if (runs.length >= limit) {
        more = true;
        break;
      }
      if (inv.out.json) inv.out.jsonLine(RunSchema, run);
      runs.push(run);
    }
    if (inv.out.json) return EXIT.ok;
    const rows = runs.map((r) => [r.id, r.workflowName, runStatusText(inv.out, r.status), formatTime(r.createTime), formatTime(r.updateTime), formatLabels(r.labels)]);
    inv.out.print(rows.length === 0 ? 'no runs match' : table(['RUN', 'WORKFLOW', 'STATUS', 'CREATED', 'UPDATED', 'LABELS'], rows, headerBold(inv.out)));
    if (more) inv.out.note(`showing the newest ${limit}; more match (raise --limit, or --limit 0 for all)`);
    return EXIT.ok;
  },
};

const cancel: CommandSpec = {
  group: 'runs', name: 'cancel', args: ['<run>'],
  summary: 'Cancels a run and its unfinished children; a finished run is returned unchanged.',
  options: { reason: { type: 'string', value: 'TEXT', help: "why, recorded in the run's error" } },
  examples: ['waymark runs cancel 01a23172-033b-7f93-91d6-20d4a94c98dd --reason "customer withdrew"'],
  async run(inv) {
    const run = await inv.client().cancel(inv.args[0]!, { ...call(inv), reason: str(inv, 'reason') });
    if (inv.out.json) inv.out.jsonLine(RunSchema, run);
    else inv.out.print(runFields(inv.out, run, []));
    return EXIT.ok;
  },
};

const journal: CommandSpec = {
  group: 'runs', name: 'journal', args: ['<run>'],
  summary: "Prints a run's journal, one row per entry in seq order.",
  details: [
    'DURATION is the time from the entry an outcome closes (its intent, or the wait it resolves) to the',
    'outcome; TOKENS are input/output tokens of a model call; BY is who resolved a wait.',
  ].join('\n'),
  options: { 'after-seq': { type: 'string', value: 'N', help: 'only entries after seq N' } },
  examples: ['waymark runs journal 01a23172-033b-7f93-91d6-20d4a94c98dd', 'waymark runs journal 01a23172-033b-7f93-91d6-20d4a94c98dd -o json | jq -c "select(.kind == \\"tool\\")"'],
  async run(inv) {
    const after = str(inv, 'after-seq');
    const entries: JournalEntry[] = [];
    for await (const e of inv.client().journal(inv.args[0]!, { ...call(inv), afterSeq: after === undefined ? undefined : seqArg('after-seq', after) })) {
      if (inv.out.json) inv.out.jsonLine(JournalEntrySchema, e);
      else entries.push(e);
    }
    if (inv.out.json) return EXIT.ok;
    const bySeq = new Map(entries.map((e) => [e.seq, e]));
    const rows = entries.map((e) => {
      const ref = e.refSeq === undefined ? undefined : bySeq.get(e.refSeq);
      const from = millis(ref?.createTime);
      const to = millis(e.createTime);
      const tokens = e.usage ? `${e.usage.inputTokens}/${e.usage.outputTokens}` : '-';
      return [
        String(e.seq), e.scope || '-', e.kind, e.name, entryStatusText(inv.out, e.status), e.attempt ? String(e.attempt) : '-',
        from !== undefined && to !== undefined ? formatDuration(to - from) : '-', tokens, e.costUsd === undefined ? '-' : formatUsd(e.costUsd),
        resolvedBy(e) || '-', entryDetail(e, 60),
      ];
    });
    inv.out.print(table(['SEQ', 'SCOPE', 'KIND', 'NAME', 'STATUS', 'ATTEMPT', 'DURATION', 'TOKENS', 'COST', 'BY', 'DETAIL'], rows, headerBold(inv.out)));
    return EXIT.ok;
  },
};

const events: CommandSpec = {
  group: 'runs', name: 'events', args: ['<run>'],
  summary: "Prints a run's events: its history so far, or with --follow live until the run ends.",
  details: [
    '--follow keeps the stream open through parked waits and reconnects by itself when the connection',
    'drops, resuming after the last seq it printed. On a terminal a last line shows the status, current',
    'step and elapsed time. Ctrl-C stops following and leaves the run as it is (exit 130).',
  ].join('\n'),
  options: {
    follow: { type: 'boolean', short: 'f', help: 'stream live events until the run ends' },
    'after-seq': { type: 'string', value: 'N', help: 'only events after seq N (where an earlier stream stopped)' },
  },
  examples: ['waymark runs events 01a23172-033b-7f93-91d6-20d4a94c98dd --follow', 'waymark runs events 01a23172-033b-7f93-91d6-20d4a94c98dd --after-seq 4 -o json'],
  async run(inv) {
    const after = str(inv, 'after-seq');
    const afterSeq = after === undefined ? -1n : seqArg('after-seq', after);
    const follow = inv.values.follow === true;
    const { run } = await inv.client().getRun(inv.args[0]!, call(inv));
    const followed = await followRun(inv, {
      run, afterSeq, followSuspended: follow, untilSeq: follow ? undefined : run.nextSeq - 1n,
      onEvent: (e) => (inv.out.json ? inv.out.jsonLine(RunEventSchema, e) : inv.out.print(eventLine(inv.out, e))),
    });
    if (followed.interrupted) {
      inv.out.note(stoppedFollowing(run.id, followed.status));
      return EXIT.interrupted;
    }
    return EXIT.ok;
  },
};

const resume: CommandSpec = {
  group: 'runs', name: 'resume', args: ['<run>'],
  summary: 'Makes a suspended, failed, cancelled or finished run execute again from its journal; --dry-run previews it.',
  details: [
    'The preview is computed from the journal with no live calls and nothing written: hits (served from',
    'the journal), misses (would run live), skipped, reruns, orphaned entries and invalid resolutions,',
    'item by item. --invalidate SEQ unpins an entry so its effect runs again.',
  ].join('\n'),
  options: {
    'dry-run': { type: 'boolean', help: 'print what a resume would do; execute and write nothing' },
    invalidate: { type: 'string', multiple: true, value: 'SEQ', help: 'unpin the effect of this journal entry so it runs again (repeatable)' },
    'drift-recovery': { type: 'string', value: 'restart|abandon', help: 'for a run that drifted under a strict policy (FLOW_DRIFT): restart it as a new run, or abandon it' },
  },
  examples: ['waymark runs resume 01a23172-033b-7f93-91d6-20d4a94c98dd --dry-run', 'waymark runs resume 01a23172-033b-7f93-91d6-20d4a94c98dd --invalidate 6'],
  async run(inv) {
    const invalidate = list(inv, 'invalidate').map((s) => seqArg('invalidate', s));
    const recovery = str(inv, 'drift-recovery');
    if (recovery !== undefined && recovery !== 'restart' && recovery !== 'abandon') throw new UsageError(`--drift-recovery must be restart or abandon; got "${recovery}"`);
    const client = inv.client();
    if (inv.values['dry-run'] === true) {
      if (recovery !== undefined) throw new UsageError('--drift-recovery cannot be previewed: drop --dry-run, or drop --drift-recovery to see the preview');
      const preview = await client.previewResume(inv.args[0]!, { ...call(inv), invalidate });
      if (inv.out.json) {
        inv.out.jsonLine(ResumePreviewSchema, preview);
        return EXIT.ok;
      }
      const counts = [['hits', preview.hits], ['misses', preview.misses], ['skipped', preview.skipped], ['reruns', preview.reruns], ['orphaned', preview.orphaned], ['invalid resolutions', preview.invalidResolutions]] as const;
      inv.out.print(`${inv.out.paint('preview', 'bold')} (nothing was executed or written): ${counts.map(([k, v]) => `${v} ${k}`).join(', ')}`);
      const rows = preview.items.map((i) => [ResumeOutcome[i.outcome]?.toLowerCase().replace('_', ' ') ?? String(i.outcome), i.seq === undefined ? '-' : String(i.seq), i.scope || '-', i.kind, i.name, i.detail]);
      if (rows.length > 0) inv.out.print(table(['OUTCOME', 'SEQ', 'SCOPE', 'KIND', 'NAME', 'DETAIL'], rows, (c, col, row) => (row < 0 ? inv.out.paint(c, 'bold') : col === 0 ? inv.out.paint(c, outcomeStyle(c)) : c)));
      return EXIT.ok;
    }
    const result = await client.resume(inv.args[0]!, { ...call(inv), invalidate, driftRecovery: recovery === undefined ? undefined : recovery === 'restart' ? 'RESTART' : 'ABANDON' });
    if (inv.out.json) inv.out.jsonLine(ResumeRunResponseSchema, create(ResumeRunResponseSchema, { run: result.run, restartedAs: result.restartedAs }));
    else inv.out.print(runFields(inv.out, result.run, [], result.restartedAs ? [['restarted as', result.restartedAs.id]] : []));
    return EXIT.ok;
  },
};

const provenance: CommandSpec = {
  group: 'runs', name: 'provenance', args: ['<run>'],
  summary: "Prints what the run's agents answered and the model calls and tool results each answer drew on, and the same for its children.",
  options: {},
  examples: ['waymark runs provenance 01a23172-033b-7f93-91d6-20d4a94c98dd'],
  async run(inv) {
    const p = await inv.client().provenance(inv.args[0]!, call(inv));
    if (inv.out.json) inv.out.jsonLine(RunProvenanceSchema, p);
    else inv.out.print(provenanceText(inv.out, p, ''));
    return EXIT.ok;
  },
};

function provenanceText(out: Output, p: RunProvenance, indent: string): string {
  const spend = p.spend ? `spent ${formatUsd(p.spend.totalUsd)} (own ${formatUsd(p.spend.ownUsd)}, children ${formatUsd(p.spend.childrenUsd)}, ${p.spend.pricedCalls} priced calls)` : '';
  const lines = [`${indent}${out.paint('run', 'bold')} ${p.runId} ${p.workflowName} ${runStatusText(out, p.status)} ${spend}${p.budgetUsd !== undefined ? ` of ${formatUsd(p.budgetUsd)}` : ''}`];
  if (p.agents.length === 0) lines.push(`${indent}  no agents`);
  for (const a of p.agents) {
    lines.push(`${indent}  ${out.paint('agent', 'bold')} ${a.agentType} (scope ${a.scope}) model ${a.model}, ${a.modelCalls.length} model calls, ${a.toolResults.length} tool calls, cost ${formatUsd(a.costUsd)}`);
    lines.push(`${indent}    answer${a.answerSeq !== undefined ? ` (seq ${a.answerSeq})` : ''}: ${a.answer === undefined ? out.paint('not yet', 'dim') : clip(JSON.stringify(a.answer), 200)}`);
    lines.push(`${indent}    drew on model calls ${a.drewOnModelCallSeqs.join(', ') || '-'}; tool results ${a.drewOnToolResultSeqs.join(', ') || '-'}`);
  }
  for (const child of p.children) lines.push(provenanceText(out, child, `${indent}  `).trimEnd());
  return lines.join('\n') + '\n';
}

function outcomeStyle(outcome: string) {
  return outcome === 'hit' ? 'green' : outcome === 'miss' || outcome === 'rerun' ? 'yellow' : outcome === 'invalid resolution' ? 'red' : 'dim';
}

export function headerBold(out: Output): (cell: string, column: number, row: number) => string {
  return (cell, _column, row) => (row < 0 ? out.paint(cell, 'bold') : cell);
}

export const RUNS_COMMANDS: CommandSpec[] = [start, get, listRuns, cancel, journal, events, resume, provenance];
