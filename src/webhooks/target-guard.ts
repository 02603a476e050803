import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/*
 * SSRF protection for webhook deliveries: an endpoint may not reach private, loopback,
 * link-local or otherwise non-public addresses unless WAYMARK_WEBHOOK_ALLOW_PRIVATE is set. The
 * check runs on the address actually connected to, at connect time, in the http agent's
 * `lookup` (so a DNS answer that changes between registration and delivery, DNS rebinding, is
 * caught), and on IP literals before the request (Node does not call `lookup` for them).
 * Redirects are never followed (dispatcher.ts), so a public endpoint cannot bounce a delivery to
 * an internal one. A name resolving to several addresses is refused when any of them is refused.
 */

const V4: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified'], ['10.0.0.0', 8, 'private'], ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'], ['169.254.0.0', 16, 'link-local'], ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'], ['192.0.2.0', 24, 'documentation'], ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'], ['198.51.100.0', 24, 'documentation'], ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'], ['240.0.0.0', 4, 'reserved'],
];
const V6: Array<[string, number, string]> = [
  ['::', 128, 'unspecified'], ['::1', 128, 'loopback'], ['fe80::', 10, 'link-local'], ['fec0::', 10, 'site-local'],
  ['fc00::', 7, 'unique-local'], ['ff00::', 8, 'multicast'], ['2001:db8::', 32, 'documentation'], ['100::', 64, 'discard'],
];

const ranges = [
  ...V4.map(([net, prefix, reason]) => ({ list: listOf(net, prefix, 'ipv4'), reason })),
  ...V6.map(([net, prefix, reason]) => ({ list: listOf(net, prefix, 'ipv6'), reason })),
];

function listOf(net: string, prefix: number, type: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  list.addSubnet(net, prefix, type);
  return list;
}

/**
 * Why `address` is not a public unicast address ('loopback', 'private', 'link-local', …), or null
 * when it is. IPv4-mapped (::ffff:a.b.c.d, in any spelling), IPv4-compatible and NAT64
 * (64:ff9b::/96) IPv6 addresses are judged by the IPv4 address they carry.
 */
export function nonPublicReason(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return 'not an IP address';
  if (family === 4) return ranges.find((r) => r.list.check(address, 'ipv4'))?.reason ?? null;
  const groups = ipv6Groups(address);
  if (!groups) return 'not an IP address';
  const embedded = embeddedIpv4(groups);
  if (embedded) {
    const reason = nonPublicReason(embedded);
    return reason === null ? null : `${reason} (IPv4 ${embedded} inside IPv6)`;
  }
  return ranges.find((r) => r.list.check(address, 'ipv6'))?.reason ?? null;
}

/** The eight 16-bit groups of an IPv6 address (dotted IPv4 tail included), or null. */
function ipv6Groups(address: string): number[] | null {
  let text = address.toLowerCase().split('%', 1)[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail, ...rest] = text.split('::');
  if (rest.length > 0) return null;
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = part(head);
  const t = part(tail);
  const fill = tail === undefined ? 0 : 8 - h.length - t.length;
  const groups = [...h, ...Array<number>(Math.max(0, fill)).fill(0), ...t];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

function embeddedIpv4(g: number[]): string | null {
  const v4 = () => `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`;
  const zeros = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeros(5) && g[5] === 0xffff) return v4(); // IPv4-mapped
  if (zeros(6) && (g[6] !== 0 || g[7]! > 1)) return v4(); // IPv4-compatible (deprecated), not :: or ::1
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return v4(); // NAT64
  return null;
}

/** A delivery target refused by the SSRF rules; the message names the address and why. */
export class WebhookTargetRefusedError extends Error {
  readonly code = 'WAYMARK_WEBHOOK_TARGET_REFUSED';
  constructor(readonly host: string, readonly address: string, readonly why: string) {
    super(`refused to connect to ${host} (${address}): ${why} address; set WAYMARK_WEBHOOK_ALLOW_PRIVATE=true to allow it`);
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * An http(s) agent `lookup` that resolves every address of the name and refuses the connection
 * when any is not public (unless `allowPrivate`).
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: { family?: number | string; all?: boolean; hints?: number }, callback: LookupCallback): void => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : typeof options.family === 'number' ? options.family : 0;
    dnsLookup(hostname, { family, hints: options.hints ?? 0, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      if (!allowPrivate) {
        for (const a of addresses) {
          const why = nonPublicReason(a.address);
          if (why) return callback(new WebhookTargetRefusedError(hostname, a.address, why) as unknown as NodeJS.ErrnoException, '');
        }
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
      return callback(null, first.address, first.family);
    });
  };
}

/** Refuses an IP literal host (Node connects to those without calling `lookup`). Null when allowed. */
export function literalRefusal(hostname: string, allowPrivate: boolean): WebhookTargetRefusedError | null {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (allowPrivate || isIP(host) === 0) return null;
  const why = nonPublicReason(host);
  return why ? new WebhookTargetRefusedError(host, host, why) : null;
}

/**
 * What is wrong with an endpoint URL at registration, or null: an absolute http(s) URL without
 * credentials whose host, when an IP literal, is public (unless `allowPrivate`). A host name is
 * checked again on every connection (guardedLookup), since its addresses can change.
 */
export function endpointUrlProblem(value: string, allowPrivate: boolean): string | null {
  // The URL parser drops tabs and line breaks silently, so a URL holding one would be stored as
  // sent and mean something else than it reads (and a log line would break where it does).
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(value)) return 'must not contain control characters (CR, LF, tab, ...); percent-encode them';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL, e.g. https://hooks.example.com/waymark';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http or https URL';
  if (url.username !== '' || url.password !== '') return 'must not carry credentials; put a token in the path or query instead';
  if (value.length > 2048) return 'must be at most 2048 characters';
  const refused = literalRefusal(url.hostname, allowPrivate);
  return refused ? `names a ${refused.why} address (${refused.address}); the server refuses private targets unless WAYMARK_WEBHOOK_ALLOW_PRIVATE=true` : null;
}
