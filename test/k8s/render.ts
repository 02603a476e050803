import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

/*
 * Renders the kustomize overlays under k8s/ offline and reads them back as objects, for the
 * manifest checks (test/k8s/) and the topology test (test/topology/), which starts the pods'
 * commands as local processes. Nothing here talks to a cluster.
 */

export const K8S_DIR = path.resolve('k8s');
export const OVERLAYS_DIR = path.join(K8S_DIR, 'overlays');

/** The oldest Kubernetes the manifests support (preStop `sleep` is on by default from 1.30) and the newest schema checked. */
export const KUBERNETES_VERSIONS = ['1.30.0', '1.37.0'] as const;

/** A rendered Kubernetes object; the checks read it loosely, as the API server would accept it. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [key: string]: unknown };
  [key: string]: any;
}

export interface Rendered {
  /** The YAML stream `kubectl kustomize` printed. */
  yaml: string;
  objects: K8sObject[];
}

/** kubectl on PATH (it carries kustomize), or undefined. */
export function findKubectl(): string | undefined {
  const found = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
  return found.status === 0 ? 'kubectl' : undefined;
}

/** A tool installed into the project's `.venv` by scripts/setup-k8s-tools.sh, or undefined. */
export function findVenvTool(name: 'kubernetes-validate' | 'hadolint'): string | undefined {
  const bin = path.resolve('.venv/bin', name);
  return existsSync(bin) ? bin : undefined;
}

export function renderKustomization(dir: string): Rendered {
  const yaml = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { yaml, objects: yamlToObjects(yaml) };
}

/**
 * No YAML parser is among the project's dependencies, and kubectl already has one: `kubectl label
 * --local` reads the stream and, removing a label no object has, prints every object unchanged as
 * JSON (plus an empty `labels` map). It keeps unknown fields, so the checks see what was written.
 */
export function yamlToObjects(yaml: string): K8sObject[] {
  const json = execFileSync('kubectl', ['label', '--local', '-f', '-', '-o', 'json', 'waymark-render-noop-'], {
    input: yaml,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const decoded = splitJsonStream(json) as K8sObject[];
  // kubectl prints a single object bare and several one after another; a List never appears for -f.
  return decoded.flatMap((o) => (o.kind === 'List' ? (o.items as K8sObject[]) : [o]));
}

/** Splits concatenated JSON values (`{…}{…}`), tracking strings so braces inside them do not count. */
export function splitJsonStream(text: string): unknown[] {
  const values: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{' || c === '[') {
      if (depth === 0) start = i;
      depth++;
    } else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) values.push(JSON.parse(text.slice(start, i + 1)));
    }
  }
  return values;
}

export interface ValidationResult {
  ok: boolean;
  /** The validator's ERROR lines (one per object that failed). */
  errors: string[];
  output: string;
}

/** `kubernetes-validate --strict`: OpenAPI schema of that Kubernetes version, unknown fields rejected. */
export function validateStrict(tool: string, yaml: string, kubernetesVersion: string): ValidationResult {
  const run = spawnSync(tool, ['--strict', '--quiet', '-k', kubernetesVersion, '-'], { input: yaml, encoding: 'utf8' });
  const output = `${run.stdout}${run.stderr}`;
  const errors = output.split('\n').filter((l) => l.startsWith('ERROR'));
  return { ok: run.status === 0 && errors.length === 0, errors, output };
}

/** The pod template of a workload (Deployment, StatefulSet, DaemonSet, Job, CronJob, Pod). */
export function podSpecOf(o: K8sObject): any {
  switch (o.kind) {
    case 'Deployment':
    case 'StatefulSet':
    case 'DaemonSet':
    case 'ReplicaSet':
    case 'Job':
      return o.spec?.template?.spec;
    case 'CronJob':
      return o.spec?.jobTemplate?.spec?.template?.spec;
    case 'Pod':
      return o.spec;
    default:
      return undefined;
  }
}

export const ref = (o: K8sObject) => `${o.kind.toLowerCase()}/${o.metadata.name}`;

/** An environment value as the kubelet would assemble it: a literal, or a reference to a Secret key. */
export type EnvValue = string | { secret: string; key: string };

/**
 * The environment of one container: `envFrom` ConfigMaps (looked up in the same render, hash
 * suffix included), then `env` entries, later ones winning, as the kubelet does.
 */
export function containerEnv(objects: K8sObject[], namespace: string | undefined, container: any): Record<string, EnvValue> {
  const env: Record<string, EnvValue> = {};
  for (const from of container.envFrom ?? []) {
    if (!from.configMapRef) continue;
    const cm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === from.configMapRef.name && o.metadata.namespace === namespace);
    if (!cm) throw new Error(`container ${container.name}: ConfigMap ${from.configMapRef.name} is not in the render`);
    Object.assign(env, cm.data ?? {});
  }
  for (const e of container.env ?? []) {
    if (typeof e.value === 'string') env[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef) env[e.name] = { secret: e.valueFrom.secretKeyRef.name, key: e.valueFrom.secretKeyRef.key };
    else throw new Error(`container ${container.name}: env ${e.name} uses a source these tests do not resolve`);
  }
  return env;
}

/**
 * The Waymark sub-command a container runs (`server`, `sweeper`, `migrate`); `''` for the Waymark
 * image without args (the policy wants them spelled out); undefined for other images.
 */
export function waymarkCommand(container: any): string | undefined {
  const image = String(container.image ?? '');
  const repo = image.split('@')[0]!.replace(/:[^/]*$/, '');
  if (repo.split('/').pop() !== 'waymark') return undefined;
  return container.command ? '' : String(container.args?.[0] ?? '');
}

/** Port of a `host:port` setting. */
export function portOf(hostPort: string): number {
  return Number(hostPort.slice(hostPort.lastIndexOf(':') + 1));
}
