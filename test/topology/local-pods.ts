import { readFileSync } from 'node:fs';
import path from 'node:path';
import { entrypoint, parseDockerfile, stageEnv } from '../k8s/dockerfile-policy.js';
import { containerEnv, podSpecOf, renderKustomization, waymarkCommand, type K8sObject } from '../k8s/render.js';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * A Kubernetes overlay turned into local processes: each pod's container becomes
 * `node bin/waymark.js <args>` (the image's ENTRYPOINT ["waymark"] is the package bin) with the
 * image's ENV, the ConfigMap and the container's env, exactly as rendered. The only changes are
 * the ones a laptop needs: DATABASE_URL (a Secret in the cluster) points at the test database, the
 * listen addresses move to 127.0.0.1:0, and the test adds its own variables (a workflows module).
 */

export interface PodTemplate {
  /** server, sweeper or migrate. */
  role: string;
  args: string[];
  env: Record<string, string>;
  /** spec.replicas, or the HPA's minReplicas when an HPA owns the count; 1 for a Job. */
  replicas: number;
  container: any;
  pod: any;
}

export interface LocalTopology {
  migrate: PodTemplate;
  server: PodTemplate;
  sweeper: PodTemplate;
  objects: K8sObject[];
}

/** The listen addresses a local process must not take from the manifest (0.0.0.0 on fixed ports). */
const LOCAL_ADDRESSES = { WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_METRICS_ADDR: '127.0.0.1:0' };

export function topologyFromOverlay(overlayDir: string, options: { databaseUrl: string; env?: Record<string, string> }): LocalTopology {
  const { objects } = renderKustomization(overlayDir);
  const final = parseDockerfile(readFileSync('Dockerfile', 'utf8')).stages.at(-1)!;
  const bin = (JSON.parse(readFileSync('package.json', 'utf8')) as { bin: Record<string, string> }).bin;
  // What WaymarkProcess runs is what the image's ENTRYPOINT runs.
  if (JSON.stringify(entrypoint(final)) !== '["waymark"]' || path.normalize(bin.waymark ?? '') !== path.normalize('bin/waymark.js')) {
    throw new Error('the Dockerfile ENTRYPOINT is no longer ["waymark"] -> bin/waymark.js; update test/topology');
  }
  const imageEnv = stageEnv(final);

  const template = (role: string): PodTemplate => {
    const matches = objects.flatMap((o) => {
      const pod = podSpecOf(o);
      return (pod?.containers ?? []).filter((c: any) => waymarkCommand(c) === role).map((c: any) => ({ o, pod, c }));
    });
    if (matches.length !== 1) throw new Error(`expected one ${role} container in ${overlayDir}, found ${matches.length}`);
    const { o, pod, c } = matches[0]!;
    const env: Record<string, string> = { ...imageEnv };
    for (const [name, value] of Object.entries(containerEnv(objects, o.metadata.namespace, c))) {
      if (typeof value === 'string') env[name] = value;
      else if (name === 'DATABASE_URL' && value.secret.startsWith('waymark-database')) env[name] = options.databaseUrl;
      else throw new Error(`${role}: ${name} comes from Secret ${value.secret}, which the local topology does not provide`);
    }
    Object.assign(env, LOCAL_ADDRESSES, options.env);
    const hpa = objects.find((h) => h.kind === 'HorizontalPodAutoscaler' && h.spec.scaleTargetRef.name === o.metadata.name);
    const replicas = o.kind === 'Job' ? 1 : (o.spec.replicas ?? hpa?.spec.minReplicas ?? 1);
    return { role, args: [...(c.args as string[])], env, replicas, container: c, pod };
  };
  return { migrate: template('migrate'), server: template('server'), sweeper: template('sweeper'), objects };
}

/** Starts one pod of the template as a local process. */
export function startPod(template: PodTemplate): WaymarkProcess {
  return WaymarkProcess.start(template.args, { env: template.env });
}

/** The metrics address a process logged (`metricsAddress`), for its httpGet probe. */
export async function metricsAddress(p: WaymarkProcess): Promise<string> {
  const line = await p.waitForLog((l) => typeof l.metricsAddress === 'string');
  return String(line.metricsAddress);
}
