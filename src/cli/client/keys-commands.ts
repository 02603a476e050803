import { create } from '@bufbuild/protobuf';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ApiKeySchema, CreateKeyResponseSchema, type ApiKey } from '@waymark-dev/client';
import { call, list, str, type CommandSpec } from './command-spec.js';
import { EXIT, UsageError } from './exit-codes.js';
import { fields, formatTime, table } from './format.js';
import type { Output } from './output.js';
import { headerBold } from './runs-commands.js';

/* `waymark keys create|list|revoke`: API keys, over AdminService (needs an admin key; docs/security.md). */

const SCOPES = ['runs:read', 'runs:write', 'approvals:decide', 'signals:send', 'admin'];


function keyFields(out: Output, k: ApiKey): string {
  const pairs: Array<[string, string]> = [
    ['key', k.id],
    ['name', k.name || '-'],
    ['namespace', k.namespace || '(every namespace: an admin key)'],
    ['scopes', k.scopes.join(', ')],
    ['created', formatTime(k.createTime)],
  ];
  if (k.createdByKeyId) pairs.push(['created by', k.createdByKeyId]);
  if (k.clientCertSha256) pairs.push(['client certificate', `SHA-256 ${k.clientCertSha256}`]);
  if (k.revokeTime) pairs.push(['revoked', formatTime(k.revokeTime)]);
  return fields(pairs, (k) => out.paint(k, 'bold'));
}

/** SHA-256 of a PEM certificate file's DER bytes, lowercase hex: what the server compares (docs/security.md "mTLS"). */
function certificateFingerprint(file: string): string {
  let pem: Buffer;
  try {
    pem = readFileSync(file);
  } catch (err) {
    throw new UsageError(`--client-cert: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    return new X509Certificate(pem).fingerprint256.replace(/:/g, '').toLowerCase();
  } catch {
    throw new UsageError(`--client-cert: ${file} is not a PEM certificate`);
  }
}

const createKey: CommandSpec = {
  group: 'keys', name: 'create', args: [],
  summary: 'Creates an API key for one namespace (or, with --admin, for every namespace) and prints its secret, shown only this once.',
  details: 'The server keeps only a hash of the secret: store it where the client reads it (WAYMARK_TOKEN). Scopes: '
    + `${SCOPES.join(', ')}; "admin" only with --admin.`,
  options: {
    namespace: { type: 'string', value: 'NS', help: 'the namespace the key may address (required unless --admin)' },
    admin: { type: 'boolean', help: 'a key of every namespace (the only kind that may carry the admin scope)' },
    scope: { type: 'string', multiple: true, value: 'SCOPE', help: `what the key may do (repeatable): ${SCOPES.join(', ')}` },
    name: { type: 'string', value: 'NAME', help: 'a name for people, e.g. "payments backend"' },
    'client-cert': { type: 'string', value: 'FILE', help: 'a client certificate (PEM) that authenticates as this key over mTLS, without the secret' },
  },
  examples: [
    'waymark keys create --namespace payments --scope runs:read --scope runs:write --scope approvals:decide --name "payments backend"',
    'waymark keys create --admin --scope admin --scope runs:read -o json | jq -r .secret',
    'waymark keys create --namespace payments --scope runs:read --scope runs:write --client-cert payments-backend.crt',
  ],
  async run(inv) {
    const namespace = str(inv, 'namespace');
    const admin = inv.values.admin === true;
    if (admin === (namespace !== undefined)) throw new UsageError('give either --namespace NS or --admin (a key of every namespace)');
    const scopes = list(inv, 'scope');
    if (scopes.length === 0) throw new UsageError(`give at least one --scope: ${SCOPES.join(', ')}`);
    const certFile = str(inv, 'client-cert');
    const clientCertSha256 = certFile === undefined ? undefined : certificateFingerprint(certFile);
    const { key, secret } = await inv.client().createKey({ name: str(inv, 'name') ?? '', namespace: namespace ?? '', scopes, clientCertSha256 }, call(inv));
    if (inv.out.json) {
      inv.out.jsonLine(CreateKeyResponseSchema, create(CreateKeyResponseSchema, { key, secret }));
      return EXIT.ok;
    }
    inv.out.print(keyFields(inv.out, key));
    inv.out.print(`\n${secret}`);
    inv.out.note('this secret is shown once; send it as "authorization: Bearer <secret>" (WAYMARK_TOKEN)');
    return EXIT.ok;
  },
};

const listKeys: CommandSpec = {
  group: 'keys', name: 'list', args: [],
  summary: 'Lists API keys, newest first, without their secrets.',
  options: {
    namespace: { type: 'string', value: 'NS', help: 'only keys of this namespace' },
    all: { type: 'boolean', help: 'also revoked keys' },
  },
  examples: ['waymark keys list', 'waymark keys list --namespace payments --all -o json'],
  async run(inv) {
    const keys = await inv.client().listKeys({ namespace: str(inv, 'namespace'), includeRevoked: inv.values.all === true, ...call(inv) });
    if (inv.out.json) {
      for (const k of keys) inv.out.jsonLine(ApiKeySchema, k);
      return EXIT.ok;
    }
    const rows = keys.map((k) => [k.id, k.namespace || '*', k.scopes.join(','), k.name, formatTime(k.createTime), k.revokeTime ? formatTime(k.revokeTime) : '-']);
    inv.out.print(rows.length === 0 ? 'no keys' : table(['KEY', 'NAMESPACE', 'SCOPES', 'NAME', 'CREATED', 'REVOKED'], rows, headerBold(inv.out)));
    return EXIT.ok;
  },
};

const revokeKey: CommandSpec = {
  group: 'keys', name: 'revoke', args: ['<key>'],
  summary: 'Revokes an API key by id (the part after "wmk_"): refused at once on the server that revoked it, within 5 s on the others.',
  options: {},
  examples: ['waymark keys revoke 3f9c0a1b2c3d4e5f'],
  async run(inv) {
    const key = await inv.client().revokeKey(inv.args[0]!, call(inv));
    if (inv.out.json) inv.out.jsonLine(ApiKeySchema, key);
    else inv.out.print(keyFields(inv.out, key));
    return EXIT.ok;
  },
};

export const KEYS_COMMANDS: CommandSpec[] = [createKey, listKeys, revokeKey];
