import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');

/** The API contract is linted and the committed generated code matches proto/ (CI runs the same). */
describe('proto and generated code', () => {
  it('pass buf lint', { timeout: 120_000 }, async () => {
    await expect(run(path.join(root, 'node_modules/.bin/buf'), ['lint'], { cwd: root })).resolves.toBeDefined();
  });

  it('leave src/gen up to date (generate --check)', { timeout: 120_000 }, async () => {
    const { stdout } = await run(process.execPath, ['scripts/generate.js', '--check'], { cwd: root });
    expect(stdout).toContain('up to date');
  });
});
