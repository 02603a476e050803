import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { isWebhookSecret, newWebhookSecret, webhookHeaders } from '../../src/webhooks/signing.js';
import { backoffMs } from '../../src/webhooks/dispatcher.js';
import { endpointUrlProblem, nonPublicReason } from '../../src/webhooks/target-guard.js';

describe('Standard Webhooks signatures', () => {
  it('verify with the standardwebhooks package; during a rotation either secret verifies', () => {
    const [oldSecret, newSecret, stranger] = [newWebhookSecret(), newWebhookSecret(), newWebhookSecret()];
    expect(isWebhookSecret(oldSecret)).toBe(true);
    const body = JSON.stringify({ type: 'run.finished', timestamp: new Date().toISOString(), data: { runId: 'r1' } });
    const headers = webhookHeaders({ id: 'msg_r1_3', timestampSeconds: Math.floor(Date.now() / 1000), body, secrets: [newSecret, oldSecret] });
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [oldSecret, newSecret]) expect(new Webhook(secret).verify(body, headers)).toMatchObject({ data: { runId: 'r1' } });
    expect(() => new Webhook(stranger).verify(body, headers)).toThrow();
    expect(() => new Webhook(newSecret).verify(`${body} `, headers)).toThrow(); // a changed body
    const stale = webhookHeaders({ id: 'msg_r1_3', timestampSeconds: Math.floor(Date.now() / 1000) - 3600, body, secrets: [newSecret] });
    expect(() => new Webhook(newSecret).verify(body, stale)).toThrow(/timestamp/i); // replay window
  });

  it('signs exactly as the package does for one secret', () => {
    const secret = newWebhookSecret();
    const at = new Date(1_796_000_000_000);
    const body = '{"a":1}';
    expect(webhookHeaders({ id: 'msg_x', timestampSeconds: at.getTime() / 1000, body, secrets: [secret] })['webhook-signature'])
      .toBe(new Webhook(secret).sign('msg_x', at, body));
  });
});

describe('SSRF: which addresses a delivery may reach', () => {
  it.each([
    ['127.0.0.1', 'loopback'], ['127.255.0.9', 'loopback'], ['10.0.0.1', 'private'], ['172.16.5.4', 'private'], ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'], ['169.254.169.254', 'link-local'], ['100.64.0.1', 'carrier-grade NAT'], ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'], ['255.255.255.255', 'reserved'], ['::1', 'loopback'], ['::', 'unspecified'], ['fe80::1', 'link-local'],
    ['fd12:3456::1', 'unique-local'], ['fc00::1', 'unique-local'], ['ff02::1', 'multicast'], ['::ffff:127.0.0.1', 'loopback (IPv4 127.0.0.1 inside IPv6)'],
    ['::ffff:7f00:1', 'loopback (IPv4 127.0.0.1 inside IPv6)'], ['::ffff:a9fe:a9fe', 'link-local (IPv4 169.254.169.254 inside IPv6)'],
    ['0:0:0:0:0:ffff:10.0.0.1', 'private (IPv4 10.0.0.1 inside IPv6)'], ['64:ff9b::a00:1', 'private (IPv4 10.0.0.1 inside IPv6)'],
    ['::127.0.0.1', 'loopback (IPv4 127.0.0.1 inside IPv6)'], ['fe80::1%eth0', 'link-local'],
  ])('%s is %s', (address, reason) => {
    expect(nonPublicReason(address)).toBe(reason);
  });

  it.each(['8.8.8.8', '172.32.0.1', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'])('%s is public', (address) => {
    expect(nonPublicReason(address)).toBeNull();
  });

  it('checks endpoint URLs at registration: scheme, credentials, private IP literals unless allowed', () => {
    expect(endpointUrlProblem('https://hooks.example.com/x', false)).toBeNull();
    expect(endpointUrlProblem('ftp://hooks.example.com/x', false)).toMatch(/http or https/);
    expect(endpointUrlProblem('https://u:p@hooks.example.com/x', false)).toMatch(/credentials/);
    expect(endpointUrlProblem('not a url', false)).toMatch(/absolute URL/);
    expect(endpointUrlProblem('http://[::ffff:192.168.0.1]/x', false)).toMatch(/private/);
    expect(endpointUrlProblem('http://127.0.0.1:8080/x', true)).toBeNull();
  });
});

describe('backoff', () => {
  it('doubles per attempt from the base, capped, with the upper half jittered', () => {
    const config = { backoffMs: 1_000, maxBackoffMs: 10_000 };
    expect([1, 2, 3, 4, 5].map((n) => backoffMs(config, n, () => 0))).toEqual([500, 1_000, 2_000, 4_000, 5_000]);
    expect([1, 2, 3, 4, 5].map((n) => backoffMs(config, n, () => 1))).toEqual([1_000, 2_000, 4_000, 8_000, 10_000]);
  });
});
