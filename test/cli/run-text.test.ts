import { create } from '@bufbuild/protobuf';
import { JournalEntrySchema, PayloadRefSchema } from '@waymark-dev/client';
import { describe, expect, it } from 'vitest';
import { entryDetail } from '../../src/cli/client/run-text.js';

/*
 * `waymark runs journal`'s DETAIL column for an entry whose payload GetJournal left out because it
 * is stored out of line (docs/journal.md "Large payloads"): its size and hash, never an empty cell
 * that reads as "no result".
 */
describe('entryDetail', () => {
  it('shows the size and hash of a payload stored out of line', () => {
    const entry = create(JournalEntrySchema, {
      kind: 'step', name: 'big', payloadRef: create(PayloadRefSchema, { sha256: 'ab12cd34ef56ab12cd34', sizeBytes: 5_242_880n }),
    });
    expect(entryDetail(entry, 80)).toBe('(5242880 bytes stored out of line, sha256 ab12cd34ef56)');
  });
});
