import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * The Go client is gofmt-clean, as every Go project is expected to be: `gofmt -l` lists the files
 * whose formatting differs from gofmt's, and the list must be empty. (Run `gofmt -w clients/go`.)
 */

const gofmt = (...args: string[]): string => execFileSync('gofmt', ['-l', ...args], { encoding: 'utf8' });

describe('Go formatting', () => {
  it('gofmt -l lists no file under clients/go', () => {
    expect(gofmt('clients/go').split('\n').filter(Boolean)).toEqual([]);
  });

  it('negative control: gofmt -l lists a badly formatted file', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'waymark-gofmt-'));
    try {
      const file = path.join(dir, 'bad.go');
      writeFileSync(file, 'package bad\nfunc  F( ) {  }\n');
      expect(gofmt(dir).trim()).toBe(file);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
