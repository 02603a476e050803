import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkPolicy } from './policy.js';
import {
  findKubectl, findVenvTool, K8S_DIR, KUBERNETES_VERSIONS, OVERLAYS_DIR, podSpecOf, renderKustomization, validateStrict, type Rendered,
} from './render.js';

/*
 * Offline checks of k8s/: every overlay (and base) is rendered with `kubectl kustomize`, validated
 * strictly against the Kubernetes OpenAPI schemas (kubernetes-validate --strict, unknown fields
 * rejected) for the oldest and newest supported versions, and held to the rules in policy.ts.
 * A deliberately broken copy proves the checks bite. Tools: kubectl on PATH; kubernetes-validate
 * in .venv (scripts/setup-k8s-tools.sh, which .ci/run calls). Without them the tests say so and skip.
 */

const kubectl = findKubectl();
const validator = findVenvTool('kubernetes-validate');
if (!kubectl) console.warn('test/k8s SKIPPED: kubectl is not on PATH, so the manifests were neither rendered nor checked');
if (!validator) console.warn('test/k8s schema validation SKIPPED: .venv/bin/kubernetes-validate is missing (run scripts/setup-k8s-tools.sh)');

const overlays = readdirSync(OVERLAYS_DIR).sort();
const targets = ['base', ...overlays];
const dirOf = (target: string) => (target === 'base' ? path.join(K8S_DIR, 'base') : path.join(OVERLAYS_DIR, target));

describe.skipIf(!kubectl)('k8s manifests', () => {
  const rendered = new Map<string, Rendered>();
  beforeAll(() => {
    for (const target of targets) rendered.set(target, renderKustomization(dirOf(target)));
  });
  const objects = (target: string) => rendered.get(target)!.objects;
  const find = (target: string, kind: string, name: string) => objects(target).find((o) => o.kind === kind && o.metadata.name === name);

  it('has the overlays the docs describe', () => {
    expect(overlays).toEqual(['dev', 'prod', 'prod-store-b']);
  });

  describe.each(targets)('%s', (target) => {
    it('follows the policy: hardened pods, gRPC probes, one sweeper, HPA owns the count, drain fits the grace', () => {
      expect(checkPolicy(objects(target), { secretsAllowed: target === 'dev' })).toEqual([]);
    });

    it.skipIf(!validator).each(KUBERNETES_VERSIONS)('is valid against the Kubernetes %s schema, strictly', (version) => {
      const result = validateStrict(validator!, rendered.get(target)!.yaml, version);
      expect(result.errors).toEqual([]);
      expect(result.ok).toBe(true);
    });
  });

  it('dev: fixed 3 server replicas and no HPA (so kubectl scale sticks), plus its own PostgreSQL and Secret', () => {
    expect(find('dev', 'HorizontalPodAutoscaler', 'waymark-server')).toBeUndefined();
    expect(find('dev', 'Deployment', 'waymark-server')!.spec.replicas).toBe(3);
    expect(find('dev', 'StatefulSet', 'waymark-postgres')!.spec.replicas).toBe(1);
    expect(objects('dev').filter((o) => o.kind === 'Secret').map((o) => o.metadata.name)).toEqual([
      expect.stringMatching(/^waymark-database-/),
      expect.stringMatching(/^waymark-postgres-/),
    ]);
  });

  it('prod: the servers serve TLS from the mounted Secret waymark-tls, which the overlay does not contain', () => {
    const pod = podSpecOf(find('prod', 'Deployment', 'waymark-server')!);
    const server = pod.containers.find((c: any) => c.name === 'server');
    expect(pod.volumes.find((v: any) => v.name === 'tls').secret.secretName).toBe('waymark-tls');
    expect(server.volumeMounts).toContainEqual({ name: 'tls', mountPath: '/etc/waymark/tls', readOnly: true });
    expect(server.env).toContainEqual({ name: 'WAYMARK_TLS_CERT_FILE', value: '/etc/waymark/tls/tls.crt' });
    const sweeper = podSpecOf(find('prod', 'Deployment', 'waymark-sweeper')!).containers[0];
    expect((sweeper.env ?? []).some((e: any) => String(e.name).startsWith('WAYMARK_TLS_'))).toBe(false);
  });

  it('prod: the HPA owns the server count, the database is external, the image comes from a registry', () => {
    const hpa = find('prod', 'HorizontalPodAutoscaler', 'waymark-server')!;
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
    expect(find('prod', 'Deployment', 'waymark-server')!.spec.replicas).toBeUndefined();
    expect(objects('prod').some((o) => o.kind === 'StatefulSet' || o.kind === 'Secret')).toBe(false);
    for (const o of objects('prod').filter((x) => podSpecOf(x))) {
      for (const c of podSpecOf(o).containers) expect(c.image).toMatch(/^registry\.example\.com\/waymark:\d+\.\d+\.\d+$/);
    }
  });

  it('prod-store-b: the same stack in its own namespace, with its own sweeper', () => {
    const shape = (target: string) => objects(target).map((o) => `${o.kind}/${o.metadata.name}`).sort();
    expect(shape('prod-store-b')).toEqual(shape('prod').map((s) => (s === 'Namespace/waymark' ? 'Namespace/waymark-store-b' : s)).sort());
    expect(new Set(objects('prod-store-b').map((o) => o.metadata.namespace ?? o.metadata.name))).toEqual(new Set(['waymark-store-b']));
    expect(find('prod-store-b', 'Deployment', 'waymark-sweeper')!.spec.replicas).toBe(1);
  });

  describe('a deliberately broken copy', () => {
    let dir: string;
    let broken: Rendered;
    beforeAll(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'waymark-k8s-broken-'));
      cpSync(K8S_DIR, dir, { recursive: true });
      const edit = (file: string, from: string | RegExp, to: string) => {
        const p = path.join(dir, file);
        const text = readFileSync(p, 'utf8');
        const next = text.replace(from, to);
        if (next === text) throw new Error(`the mutation of ${file} did not apply: ${String(from)}`);
        writeFileSync(p, next);
      };
      edit('base/sweeper-deployment.yaml', /replicas: 1\n/, 'replicas: 2\n');
      edit('base/server-deployment.yaml', 'readOnlyRootFilesystem: true', 'readOnlyRootFilesytem: true');
      edit('base/server-deployment.yaml', 'spec:\n  revisionHistoryLimit', 'spec:\n  replicas: 3\n  revisionHistoryLimit');
      edit('base/server-deployment.yaml', 'service: readiness', 'service: ready');
      edit('base/server-deployment.yaml', 'terminationGracePeriodSeconds: 30', 'terminationGracePeriodSeconds: 12');
      edit('overlays/prod/kustomization.yaml', 'newTag: 0.1.0', 'newTag: latest');
      edit('overlays/prod/server-tls.yaml', 'readinessProbe:\n            grpc:\n              port: 50052', 'readinessProbe:\n            grpc:\n              port: 50051');
      edit('overlays/prod/server-tls.yaml', 'mountPath: /etc/waymark/tls', 'mountPath: /etc/waymark/certs');
      broken = renderKustomization(path.join(dir, 'overlays/prod'));
    });
    afterAll(() => {
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('fails the policy checks, each for its reason', () => {
      const violations = checkPolicy(broken.objects, { secretsAllowed: false });
      const expected = [
        'deployment/waymark-sweeper: sweeper replicas must be 1, got 2',
        'deployment/waymark-server: container server: readOnlyRootFilesystem must be true',
        'deployment/waymark-server: is scaled by horizontalpodautoscaler/waymark-server, so it must not set spec.replicas',
        'deployment/waymark-server: container server: readinessProbe must ask for service "readiness"',
        'deployment/waymark-server: terminationGracePeriodSeconds (12) must cover preStop (5 s) + WAYMARK_SHUTDOWN_GRACE_MS (10000 ms) + 5 s',
        'deployment/waymark-sweeper: container sweeper: image "registry.example.com/waymark:latest" must be pinned',
        'deployment/waymark-server: container server: readinessProbe must probe the plaintext health port 50052, not 50051',
        'deployment/waymark-server: container server: WAYMARK_TLS_CERT_FILE must be a file of a mounted Secret volume',
      ];
      for (const e of expected) expect(violations.some((v) => v.startsWith(e)), `expected a violation starting "${e}" in:\n${violations.join('\n')}`).toBe(true);
    });

    it.skipIf(!validator)('fails strict schema validation on the misspelt field', () => {
      const result = validateStrict(validator!, broken.yaml, KUBERNETES_VERSIONS[0]);
      expect(result.ok).toBe(false);
      expect(result.errors).toEqual([expect.stringMatching(/deployment\/waymark-server .*'readOnlyRootFilesytem' was unexpected/)]);
    });
  });
});
