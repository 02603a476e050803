import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// Every file of src/engine/ opens with a header (docs/architecture.md "The engine's rooms"): 2 to 4
// `//` lines that name its folder, say what the file is, and say what it must not do.
const engineDir = path.join(process.cwd(), 'src/engine');

function engineFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const full = path.join(dir, d.name);
    if (d.isDirectory()) return engineFiles(full);
    return d.name.endsWith('.ts') ? [full] : [];
  });
}

/** The problem with a file's opening, or null when it has the header. */
function headerProblem(relPath: string, text: string): string | null {
  const lines = text.split('\n');
  let n = 0;
  while (n < lines.length && lines[n]!.startsWith('//')) n++;
  if (n < 2 || n > 4) return `opens with ${n} comment lines, not 2 to 4`;
  const folder = path.posix.dirname(relPath);
  const room = folder === '.' ? 'engine/' : `${folder}/`;
  if (!lines[0]!.startsWith(`// ${room}:`)) return `the header's first line must start with "// ${room}:"`;
  const header = lines.slice(0, n).join(' ');
  if (!/must not|pure:/i.test(header)) return 'the header must say what the file must not do ("Must not …" or "Pure: …")';
  return null;
}

describe('src/engine/ file headers', () => {
  it('every file opens with one', () => {
    const files = engineFiles(engineDir);
    expect(files.length).toBeGreaterThan(20);
    const problems = files
      .map((f) => {
        const rel = path.relative(engineDir, f).split(path.sep).join('/');
        const problem = headerProblem(rel, readFileSync(f, 'utf8'));
        return problem ? `${rel}: ${problem}` : null;
      })
      .filter((p) => p !== null);
    expect(problems).toEqual([]);
  });

  it('the check bites: no header, a header naming another folder, a header with no "must not"', () => {
    expect(headerProblem('replay/x.ts', "import { a } from './a.js';\n")).toMatch(/0 comment lines/);
    expect(headerProblem('replay/x.ts', '// runtime/: a thing.\n// Must not do I/O.\n')).toMatch(/replay\/:/);
    expect(headerProblem('engine.ts', '// engine/: a thing.\n// It does things.\n')).toMatch(/must not/);
    expect(headerProblem('engine.ts', '// engine/: a thing.\n// Must not do I/O.\nexport const a = 1;\n')).toBeNull();
  });
});
