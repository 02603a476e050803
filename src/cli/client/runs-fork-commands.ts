import { create } from '@bufbuild/protobuf';
import { CompareRunsResponseSchema, EffectDifference, ForkPreviewSchema, ForkRunResponseSchema, ResumeOutcome, type EffectRecord } from '@waymark-dev/client';
import { call, list, str, type CommandSpec } from './command-spec.js';
import { EXIT, UsageError } from './exit-codes.js';
import { clip, formatDuration, formatUsd, table } from './format.js';
import { readJsonArg, readPairs } from './json-input.js';
import { runFields, seqArg } from './runs-commands.js';

/* `waymark runs fork` and `waymark runs compare` (docs/forks.md). */

function seqOf(text: string | undefined): bigint {
  if (text === undefined) throw new UsageError('--at is required: the seq of the journal entry to fork at (waymark runs journal RUN lists them)');
  return seqArg('at', text);
}

const fork: CommandSpec = {
  group: 'runs', name: 'fork', args: ['<run>'],
  summary: "Starts a new run from the run's journal up to an entry, keeping every result before it; --dry-run previews it.",
  details: [
    'The fork keeps the entries before the fork point as recorded results (never executed again) and',
    'executes the workflow from there, optionally with another input, model (every live model call of',
    'its agents), workflow version, or decision for the approval at the fork point. The source is',
    'unchanged; the fork is labelled waymark.fork_of and waymark.fork_seq. docs/forks.md says exactly',
    'which entries are kept and dropped.',
  ].join('\n'),
  options: {
    at: { type: 'string', value: 'SEQ', help: 'the journal entry to fork at (an entry inside an effect names the whole effect)' },
    input: { type: 'string', value: 'JSON|@FILE|-', help: "the fork's input (default the source's)" },
    model: { type: 'string', value: 'NAME', help: "the model every live model call of the fork's agents uses" },
    version: { type: 'string', value: 'VERSION', help: 'the workflow version to run (the one the server runs)' },
    decision: { type: 'string', value: 'approve|deny', help: 'a decision for the approval at the fork point' },
    comment: { type: 'string', value: 'TEXT', help: 'journaled with --decision' },
    'idempotency-key': { type: 'string', value: 'KEY', help: 'a repeat with the same key returns the first fork' },
    budget: { type: 'string', value: 'USD', help: "the fork's budget (default the source's)" },
    label: { type: 'string', multiple: true, value: 'K=V', help: "a label added to the source's (repeatable)" },
    wait: { type: 'boolean', help: 'execute the fork and answer when it ends or parks' },
    'dry-run': { type: 'boolean', help: 'print what the fork would keep, redo and cost; write nothing' },
  },
  examples: ['waymark runs fork 01a23172-033b-7f93-91d6-20d4a94c98dd --at 7 --model openai:gpt-4o --dry-run', 'waymark runs fork 01a23172-033b-7f93-91d6-20d4a94c98dd --at 3 --decision deny --wait'],
  async run(inv) {
    const at = seqOf(str(inv, 'at'));
    const decisionText = str(inv, 'decision');
    if (decisionText !== undefined && decisionText !== 'approve' && decisionText !== 'deny') throw new UsageError(`--decision must be approve or deny; got "${decisionText}"`);
    const comment = str(inv, 'comment');
    if (comment !== undefined && decisionText === undefined) throw new UsageError('--comment goes with --decision');
    const budgetText = str(inv, 'budget');
    const budgetUsd = budgetText === undefined ? undefined : Number(budgetText);
    if (budgetUsd !== undefined && !(Number.isFinite(budgetUsd) && budgetUsd >= 0)) throw new UsageError(`--budget must be a number of US dollars >= 0; got "${budgetText}"`);
    const inputText = str(inv, 'input');
    const options = {
      ...call(inv),
      input: inputText === undefined ? undefined : readJsonArg('input', inputText),
      model: str(inv, 'model'), workflowVersion: str(inv, 'version'), budgetUsd,
      decision: decisionText === undefined ? undefined : { approve: decisionText === 'approve', comment },
      labels: readPairs('label', list(inv, 'label')),
    };
    const client = inv.client();
    const runId = inv.args[0]!;
    if (inv.values['dry-run'] === true) {
      if (inv.values.wait === true || str(inv, 'idempotency-key') !== undefined) throw new UsageError('--dry-run writes nothing: drop --wait and --idempotency-key');
      const p = await client.previewFork(runId, at, options);
      if (inv.out.json) {
        inv.out.jsonLine(ForkPreviewSchema, p);
        return EXIT.ok;
      }
      inv.out.print(`${inv.out.paint('fork preview', 'bold')} (nothing was executed or written): fork point seq ${p.forkSeq}, ${p.kept} entries kept, ${p.dropped} dropped, ${p.rerun.length} kept effects run again${p.rerun.length ? ` (seq ${p.rerun.join(', ')})` : ''}`);
      inv.out.print(`cost: ${formatUsd(p.keptCostUsd)} recorded in the kept entries (not paid again); ${formatUsd(p.droppedCostUsd)} spent by the source on what the fork redoes`);
      const rows = (p.replay?.items ?? []).map((i) => [ResumeOutcome[i.outcome]?.toLowerCase().replace('_', ' ') ?? String(i.outcome), i.seq === undefined ? '-' : String(i.seq), i.scope || '-', i.kind, i.name, i.detail]);
      if (rows.length > 0) inv.out.print(table(['OUTCOME', 'SEQ', 'SCOPE', 'KIND', 'NAME', 'DETAIL'], rows, (c, _col, row) => (row < 0 ? inv.out.paint(c, 'bold') : c)));
      return EXIT.ok;
    }
    const result = await client.fork(runId, at, { ...options, idempotencyKey: str(inv, 'idempotency-key'), wait: inv.values.wait === true });
    if (inv.out.json) inv.out.jsonLine(ForkRunResponseSchema, create(ForkRunResponseSchema, { run: result.run, created: result.created, forkSeq: result.forkSeq, waitingOn: result.waitingOn }));
    else inv.out.print(runFields(inv.out, result.run, result.waitingOn, [['forked from', `${runId} at seq ${result.forkSeq}`], ...(result.created ? [] : [['created', 'no: the idempotency key named an earlier fork'] as [string, string]])]));
    return EXIT.ok;
  },
};

const DIFFERENCE: Record<number, string> = {
  [EffectDifference.SAME]: 'same', [EffectDifference.CHANGED]: 'changed', [EffectDifference.ONLY_A]: 'only a', [EffectDifference.ONLY_B]: 'only b',
};

function side(r: EffectRecord | undefined): string {
  if (!r) return '-';
  const tokens = r.inputTokens + r.outputTokens > 0n ? ` ${r.inputTokens}+${r.outputTokens} tok` : '';
  return `#${r.seq} ${r.status}${r.model ? ` ${r.model}` : ''}${tokens}${r.costUsd !== undefined ? ` ${formatUsd(r.costUsd)}` : ''} ${formatDuration(Number(r.durationMs))}`;
}

const compare: CommandSpec = {
  group: 'runs', name: 'compare', args: ['<run-a>', '<run-b>'],
  summary: 'Compares two runs of one workflow effect by effect: output, model, tokens, cost, duration.',
  details: 'Effects are paired by call site (scope, kind, name, position). A fork and its source show the fork point and the entries the fork kept.',
  options: {},
  examples: ['waymark runs compare 01a23172-033b-7f93-91d6-20d4a94c98dd 01a23172-2c4e-7c1b-a3f0-7e0d1c9b55aa'],
  async run(inv) {
    const c = await inv.client().compareRuns(inv.args[0]!, inv.args[1]!, call(inv));
    if (inv.out.json) {
      inv.out.jsonLine(CompareRunsResponseSchema, c);
      return EXIT.ok;
    }
    if (c.forkSeq !== undefined) inv.out.print(`fork point: seq ${c.forkSeq}`);
    const rows = c.effects.map((e) => [
      DIFFERENCE[e.difference] ?? '?', e.kept ? 'kept' : '', e.scope || '-', e.kind, `${e.name}${e.position > 0 ? ` #${e.position}` : ''}`, side(e.a), side(e.b),
      e.difference === EffectDifference.CHANGED ? clip(`${JSON.stringify(e.a?.output ?? null)} -> ${JSON.stringify(e.b?.output ?? null)}`, 80) : '',
    ]);
    if (rows.length > 0) inv.out.print(table(['DIFF', 'KEPT', 'SCOPE', 'KIND', 'NAME', 'A', 'B', 'OUTPUT'], rows, (cell, _col, row) => (row < 0 ? inv.out.paint(cell, 'bold') : cell)));
    const totals = (t: typeof c.totalsA) => (t ? `${formatUsd(t.costUsd)}, ${t.inputTokens}+${t.outputTokens} tokens, ${t.effects} effects, ${formatDuration(Number(t.durationMs))}` : '-');
    inv.out.print(`a ${c.a?.id ?? '?'}: ${totals(c.totalsA)}\nb ${c.b?.id ?? '?'}: ${totals(c.totalsB)}`);
    return EXIT.ok;
  },
};

export const FORK_COMMANDS: CommandSpec[] = [fork, compare];
