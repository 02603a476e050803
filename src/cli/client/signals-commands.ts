import { create } from '@bufbuild/protobuf';
import { SendSignalResponseSchema } from '@waymark-dev/client';
import { call, str, type CommandSpec } from './command-spec.js';
import { EXIT } from './exit-codes.js';
import { readJsonArg } from './json-input.js';

/* `waymark signals send`: delivers a named signal to a run. */

const send: CommandSpec = {
  group: 'signals', name: 'send', args: ['<run>', '<name>'],
  summary: 'Delivers a named signal to a run (ctx.signal); a run not waiting yet keeps it for its next wait of that name.',
  details: 'A payload failing the wait\'s schema is refused (exit 2) and nothing is written. A wait another resolution already closed is exit 4.',
  options: {
    payload: { type: 'string', value: 'JSON|@FILE|-', help: 'the signal payload: JSON, @file or - (default none)' },
    'signal-id': { type: 'string', value: 'ID', help: 'makes the delivery idempotent: a repeat with the same id is applied once' },
  },
  examples: [`waymark signals send 01a23172-033b-7f93-91d6-20d4a94c98dd documents --payload '{"received":true}' --signal-id mail-4711`],
  async run(inv) {
    const [runId, name] = inv.args as [string, string];
    const raw = str(inv, 'payload');
    const payload = raw === undefined ? undefined : readJsonArg('payload', raw);
    const signalId = str(inv, 'signal-id');
    const r = await inv.client().sendSignal(runId, name, payload, { ...call(inv), signalId });
    if (inv.out.json) {
      inv.out.jsonLine(SendSignalResponseSchema, create(SendSignalResponseSchema, r));
    } else if (r.buffered) {
      inv.out.print(`signal "${name}" kept for run ${runId}: its next wait for "${name}" receives it`);
    } else {
      inv.out.print(`signal "${name}" delivered to run ${runId} (journal seq ${r.seq}${r.reason === 'duplicate' ? ', a repeat of an earlier delivery with this id' : ''})`);
    }
    return EXIT.ok;
  },
};

export const SIGNALS_COMMANDS: CommandSpec[] = [send];
