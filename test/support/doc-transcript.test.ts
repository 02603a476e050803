import { describe, expect, it } from 'vitest';
import { parseTranscript, TranscriptIds } from './doc-transcript.js';

const PAGE_ID = '01a2318f-4eb9-7dc7-9051-b437ef473f30';
const RUN_ID = '01a23483-cb9c-7907-8a0e-a609cb5932e6';

describe('parseTranscript', () => {
  it('splits commands and what each printed; joins continuation lines', () => {
    expect(parseTranscript('$ waymark runs get x; echo "exit $?"\nnot found\nexit 3\n$ a \\\n  b\n$ true\n')).toEqual([
      { command: 'waymark runs get x; echo "exit $?"', expected: 'not found\nexit 3\n' },
      { command: 'a \n  b', expected: '' },
      { command: 'true', expected: '' },
    ]);
  });

  it('refuses output before the first command', () => {
    expect(() => parseTranscript('orphan\n$ true\n')).toThrow(/starts with a "\$ " command line/);
  });
});

describe('TranscriptIds', () => {
  it('binds the page\'s ids to the run\'s in order of appearance, and puts the run\'s into later commands', () => {
    const ids = new TranscriptIds();
    expect(ids.actual(`started run ${RUN_ID}\n`)).toBe(ids.expected(`started run ${PAGE_ID}\n`));
    expect(ids.command(`waymark approvals complete ${PAGE_ID}:1 --by ana`)).toBe(`waymark approvals complete ${RUN_ID}:1 --by ana`);
    // An id the page never printed (a made-up one for a not-found example) is left as written.
    expect(ids.command('waymark runs get 01a2318e-0000-7000-8000-000000000000')).toBe('waymark runs get 01a2318e-0000-7000-8000-000000000000');
  });

  it('a different id where the page repeats one does not compare equal', () => {
    const ids = new TranscriptIds();
    ids.expected(`run ${PAGE_ID}`);
    ids.actual(`run ${RUN_ID}`);
    expect(ids.actual(`run ${PAGE_ID}`)).not.toBe(ids.expected(`run ${PAGE_ID}`));
  });

  it('ignores times, durations (and their table padding) and refund ids; never digests or statuses', () => {
    const ids = new TranscriptIds();
    const page = '3  approval  resolved  6.6s      ana\n   0  12:24:00.292  run RUNNING  2026-12-01T12:23:25Z  rf_858c27023c50…\n';
    const run = '3  approval  resolved  6m57s     ana\n   0  02:11:16.504  run RUNNING  2026-12-02T02:11:16Z  rf_86da17fcf84d…   \n';
    expect(ids.actual(run)).toBe(ids.expected(page));
    expect(ids.actual('digest 36f385a24170 SUCCEEDED')).not.toBe(ids.expected('digest 77744e275593 SUCCEEDED'));
    expect(ids.actual('status RUNNING')).not.toBe(ids.expected('status SUCCEEDED'));
  });
});
