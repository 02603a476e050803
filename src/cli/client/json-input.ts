import { readFileSync } from 'node:fs';
import type { JsonValue } from '@waymark-dev/client';
import { UsageError } from './exit-codes.js';

/*
 * A JSON value given on the command line (`--input`, `--payload`): the JSON itself, `@file` for a
 * file's contents, or `-` for standard input. Malformed JSON is refused before anything is sent,
 * naming the flag and where the parser stopped.
 */

export function readJsonArg(flag: string, arg: string, readStdin: () => string = () => readFileSync(0, 'utf8')): JsonValue {
  let text: string;
  let where: string;
  if (arg === '-') {
    text = readStdin();
    where = 'standard input';
  } else if (arg.startsWith('@')) {
    const file = arg.slice(1);
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new UsageError(`--${flag} ${arg}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
    where = file;
  } else {
    text = arg;
    where = 'the argument';
  }
  try {
    return JSON.parse(text) as JsonValue;
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new UsageError(`--${flag} is not valid JSON (${where}: ${reason}); give a JSON value such as '{"order":"A-1"}', @file or -`);
  }
}

/** `k=v` pairs of a repeatable flag (`--label team=ops`). */
export function readPairs(flag: string, pairs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`--${flag} must be key=value; got "${pair}"`);
    out[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return out;
}
