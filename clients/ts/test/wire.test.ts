import { createRegistry, equals, fromBinary, fromJson, toBinary, toJson, type JsonValue } from '@bufbuild/protobuf';
import { file_google_protobuf_any, file_google_protobuf_duration } from '@bufbuild/protobuf/wkt';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { file_google_rpc_error_details } from '../src/gen/google/rpc/error_details_pb.js';
import { file_google_rpc_status } from '../src/gen/google/rpc/status_pb.js';
import { file_waymark_v1_run } from '../src/gen/waymark/v1/run_pb.js';
import { file_waymark_v1_run_service } from '../src/gen/waymark/v1/run_service_pb.js';
import { file_waymark_v1_signal_service } from '../src/gen/waymark/v1/signal_service_pb.js';

const WIRE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/wire');

const registry = createRegistry(
  file_google_protobuf_any, file_google_protobuf_duration, file_google_rpc_status, file_google_rpc_error_details,
  file_waymark_v1_run, file_waymark_v1_run_service, file_waymark_v1_signal_service,
);

interface Fixture {
  type: string;
  json: JsonValue;
  binary: string;
}

const fixtures = readdirSync(WIRE).filter((f) => f.endsWith('.json')).sort();

// The shared fixtures (scripts/wire-fixtures.ts) decode, print and re-encode identically with the
// client's own generated code, as they do in the Go and Python clients' tests.
describe('wire fixtures (test/wire)', () => {
  it('exist', () => expect(fixtures.length).toBeGreaterThanOrEqual(20));

  it('are what scripts/wire-fixtures.ts writes', () => {
    const check = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/wire-fixtures.ts', '--check'], { cwd: path.resolve(WIRE, '../..'), encoding: 'utf8' });
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
  });

  it.each(fixtures)('%s round-trips', (file) => {
    const fixture = JSON.parse(readFileSync(path.join(WIRE, file), 'utf8')) as Fixture;
    const schema = registry.getMessage(fixture.type);
    expect(schema, fixture.type).toBeDefined();
    const bytes = new Uint8Array(Buffer.from(fixture.binary, 'base64'));
    const fromBytes = fromBinary(schema!, bytes);
    const fromText = fromJson(schema!, fixture.json, { registry });
    expect(equals(schema!, fromBytes, fromText, { registry, unpackAny: true })).toBe(true);
    expect(Buffer.from(toBinary(schema!, fromText)).toString('base64')).toBe(fixture.binary);
    expect(toJson(schema!, fromBytes, { registry })).toEqual(fixture.json);
  });
});
