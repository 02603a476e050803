import { LIVENESS, READINESS } from '../../src/cli/readiness.js';
import { containerEnv, podSpecOf, portOf, ref, waymarkCommand, type K8sObject } from './render.js';

/*
 * What a rendered overlay must satisfy beyond the OpenAPI schema: the rules docs/kubernetes.md
 * promises (hardened pods, probes that match the code, one sweeper per store, an HPA that owns its
 * Deployment's count, graceful drains that fit the grace period). Each violation is one line
 * naming the object; test/k8s/manifests.test.ts shows that a broken copy trips them.
 */

/** Time left after the drain for closing the store and flushing logs before SIGKILL. */
const SHUTDOWN_MARGIN_MS = 5_000;

export interface PolicyOptions {
  /** Only overlays/dev may carry a Secret (its throwaway database password). */
  secretsAllowed: boolean;
}

export function checkPolicy(objects: K8sObject[], options: PolicyOptions): string[] {
  const violations: string[] = [];
  const fail = (o: K8sObject, message: string) => violations.push(`${ref(o)}: ${message}`);

  const namespaces = objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name);
  if (namespaces.length !== 1) violations.push(`the render must create exactly one Namespace (one store per namespace), found ${namespaces.length}`);
  for (const o of objects) {
    if (o.kind !== 'Namespace' && o.metadata.namespace !== namespaces[0]) fail(o, `must live in namespace ${namespaces[0]}, not ${o.metadata.namespace}`);
    if (o.kind === 'Secret' && !options.secretsAllowed) fail(o, 'Secrets are referenced, never committed (create waymark-database out of band)');
  }

  for (const o of objects) {
    const pod = podSpecOf(o);
    if (pod) checkPod(objects, o, pod, fail);
  }

  const sweepers = objects.filter((o) => podSpecOf(o)?.containers?.some((c: any) => waymarkCommand(c) === 'sweeper'));
  if (sweepers.length !== 1) violations.push(`exactly one sweeper workload per store, found ${sweepers.length}`);
  for (const s of sweepers) {
    if (s.kind !== 'Deployment') fail(s, 'the sweeper runs as a Deployment');
    if (s.spec?.replicas !== 1) fail(s, `sweeper replicas must be 1, got ${s.spec?.replicas}`);
    if (s.spec?.strategy?.type !== 'Recreate') fail(s, `sweeper strategy must be Recreate (old pod gone before the new one starts), got ${s.spec?.strategy?.type}`);
  }

  const migrations = objects.filter((o) => o.kind === 'Job' && podSpecOf(o).containers.some((c: any) => waymarkCommand(c) === 'migrate'));
  if (migrations.length !== 1) violations.push(`exactly one migration Job (waymark migrate), found ${migrations.length}`);

  const servers = objects.filter((o) => podSpecOf(o)?.containers?.some((c: any) => waymarkCommand(c) === 'server'));
  if (servers.length !== 1) violations.push(`exactly one server Deployment, found ${servers.length}`);
  for (const server of servers) {
    const labels = server.spec?.template?.metadata?.labels ?? {};
    const selects = (selector: Record<string, string> | undefined) =>
      !!selector && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
    const services = objects.filter((o) => o.kind === 'Service' && selects(o.spec?.selector));
    if (!services.some((s) => s.spec.clusterIP !== 'None')) fail(server, 'no ClusterIP Service selects the server pods');
    if (!services.some((s) => s.spec.clusterIP === 'None')) fail(server, 'no headless Service selects the server pods (client-side balancing)');
    for (const s of services) {
      if (!s.spec.ports?.some((p: any) => p.targetPort === 'grpc' && p.appProtocol === 'kubernetes.io/h2c')) fail(s, 'must target the named grpc port with appProtocol kubernetes.io/h2c');
    }
    if (!objects.some((o) => o.kind === 'PodDisruptionBudget' && selects(o.spec?.selector?.matchLabels))) fail(server, 'no PodDisruptionBudget selects the server pods');
  }

  for (const hpa of objects.filter((o) => o.kind === 'HorizontalPodAutoscaler')) {
    const target = objects.find((o) => o.kind === hpa.spec.scaleTargetRef.kind && o.metadata.name === hpa.spec.scaleTargetRef.name);
    if (!target) fail(hpa, `scale target ${hpa.spec.scaleTargetRef.kind}/${hpa.spec.scaleTargetRef.name} is not in the render`);
    else if (target.spec?.replicas !== undefined) fail(target, `is scaled by ${ref(hpa)}, so it must not set spec.replicas (every apply would fight the HPA)`);
    if (target && sweepers.includes(target)) fail(hpa, 'must not scale the sweeper');
  }

  if (!objects.some((o) => o.kind === 'NetworkPolicy' && Object.keys(o.spec?.podSelector ?? {}).length === 0)) {
    violations.push('no default-deny NetworkPolicy (empty podSelector) in the namespace');
  }
  return violations;
}

function checkPod(objects: K8sObject[], o: K8sObject, pod: any, fail: (o: K8sObject, message: string) => void): void {
  const podSc = pod.securityContext ?? {};
  const containers: any[] = [...(pod.initContainers ?? []), ...(pod.containers ?? [])];
  if (pod.automountServiceAccountToken !== false) fail(o, 'automountServiceAccountToken must be false (nothing here calls the Kubernetes API)');
  for (const c of containers) {
    const sc = c.securityContext ?? {};
    const where = `container ${c.name}`;
    if ((sc.runAsNonRoot ?? podSc.runAsNonRoot) !== true) fail(o, `${where}: runAsNonRoot must be true`);
    if ((sc.runAsUser ?? podSc.runAsUser) === 0) fail(o, `${where}: runAsUser must not be 0`);
    const seccomp = sc.seccompProfile?.type ?? podSc.seccompProfile?.type;
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost') fail(o, `${where}: seccompProfile must be RuntimeDefault, got ${seccomp}`);
    if (sc.readOnlyRootFilesystem !== true) fail(o, `${where}: readOnlyRootFilesystem must be true`);
    if (sc.allowPrivilegeEscalation !== false) fail(o, `${where}: allowPrivilegeEscalation must be false`);
    if (sc.privileged === true) fail(o, `${where}: must not be privileged`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) fail(o, `${where}: capabilities must drop ALL`);
    for (const kind of ['requests', 'limits'] as const) {
      for (const resource of ['cpu', 'memory']) {
        if (c.resources?.[kind]?.[resource] === undefined) fail(o, `${where}: resources.${kind}.${resource} is missing`);
      }
    }
    const image = String(c.image ?? '');
    const tag = /^[^@]*:([^/:@]+)$/.exec(image.split('@')[0]!)?.[1];
    if (!image.includes('@sha256:') && (!tag || tag === 'latest')) fail(o, `${where}: image "${image}" must be pinned to a version tag (not latest) or digest`);

    const command = waymarkCommand(c);
    if (command === '') fail(o, `${where}: the Waymark image takes its sub-command as args (server, sweeper, migrate), with no command override`);
    if (command === 'server') checkServer(objects, o, pod, c, fail);
    if (command === 'sweeper' && !c.livenessProbe) fail(o, `${where}: the sweeper needs a liveness probe`);
    if (command !== undefined && !(c.env ?? []).some((e: any) => e.name === 'DATABASE_URL' && e.valueFrom?.secretKeyRef)) {
      fail(o, `${where}: DATABASE_URL must come from a Secret (secretKeyRef)`);
    }
  }
}

function checkServer(objects: K8sObject[], o: K8sObject, pod: any, c: any, fail: (o: K8sObject, message: string) => void): void {
  const where = `container ${c.name}`;
  const env = containerEnv(objects, o.metadata.namespace, c);
  const addr = typeof env.WAYMARK_ADDR === 'string' ? env.WAYMARK_ADDR : undefined;
  const metricsAddr = typeof env.WAYMARK_METRICS_ADDR === 'string' ? env.WAYMARK_METRICS_ADDR : undefined;
  if (!addr?.startsWith('0.0.0.0:')) fail(o, `${where}: WAYMARK_ADDR must listen on 0.0.0.0 to be reachable, got ${addr}`);
  if (!metricsAddr?.startsWith('0.0.0.0:')) fail(o, `${where}: WAYMARK_METRICS_ADDR must listen on 0.0.0.0 to be scraped, got ${metricsAddr}`);
  const grpcPort = c.ports?.find((p: any) => p.name === 'grpc')?.containerPort;
  const metricsPort = c.ports?.find((p: any) => p.name === 'metrics')?.containerPort;
  if (addr && grpcPort !== portOf(addr)) fail(o, `${where}: the grpc containerPort ${grpcPort} is not WAYMARK_ADDR's port`);
  if (metricsAddr && metricsPort !== portOf(metricsAddr)) fail(o, `${where}: the metrics containerPort ${metricsPort} is not WAYMARK_METRICS_ADDR's port`);

  // With TLS on the API port the kubelet (which cannot speak TLS to a gRPC probe) asks the
  // plaintext health listener instead: WAYMARK_HEALTH_ADDR, container port `health`.
  const tls = typeof env.WAYMARK_TLS_CERT_FILE === 'string';
  const healthAddr = typeof env.WAYMARK_HEALTH_ADDR === 'string' ? env.WAYMARK_HEALTH_ADDR : undefined;
  const healthPort = c.ports?.find((p: any) => p.name === 'health')?.containerPort;
  if (healthAddr && healthPort !== portOf(healthAddr)) fail(o, `${where}: the health containerPort ${healthPort} is not WAYMARK_HEALTH_ADDR's port`);
  if (tls) {
    if (!healthAddr) fail(o, `${where}: with WAYMARK_TLS_CERT_FILE set, WAYMARK_HEALTH_ADDR must give the probes a plaintext health port`);
    for (const variable of ['WAYMARK_TLS_CERT_FILE', 'WAYMARK_TLS_KEY_FILE']) {
      const file = env[variable];
      const mount = (c.volumeMounts ?? []).find((m: any) => typeof file === 'string' && file.startsWith(`${m.mountPath}/`));
      const volume = mount && (pod.volumes ?? []).find((v: any) => v.name === mount.name);
      if (!volume?.secret?.secretName) fail(o, `${where}: ${variable} must be a file of a mounted Secret volume, got ${String(file)}`);
    }
  }
  const probePort = tls ? healthPort : grpcPort;
  const probes: [string, string][] = [['livenessProbe', LIVENESS], ['readinessProbe', READINESS], ['startupProbe', LIVENESS]];
  for (const [probe, service] of probes) {
    const grpc = c[probe]?.grpc;
    if (!grpc) fail(o, `${where}: ${probe} must be a native gRPC probe (grpc.health.v1)`);
    else {
      if (grpc.port !== probePort) fail(o, `${where}: ${probe} must probe the ${tls ? 'plaintext health' : 'grpc'} port ${probePort}, not ${grpc.port}`);
      if (grpc.service !== service) fail(o, `${where}: ${probe} must ask for service "${service}" (src/cli/readiness.ts), not "${grpc.service}"`);
    }
  }

  // After SIGTERM the server drains calls, then runs, all within WAYMARK_SHUTDOWN_GRACE_MS counted
  // from the signal (src/cli/serve-command.ts), then closes the store. The kubelet's SIGKILL must
  // come later than the preStop sleep, that grace and a margin for the closing steps.
  const preStopSeconds = c.lifecycle?.preStop?.sleep?.seconds;
  const graceMs = Number(typeof env.WAYMARK_SHUTDOWN_GRACE_MS === 'string' ? env.WAYMARK_SHUTDOWN_GRACE_MS : 10_000);
  const terminationMs = (pod.terminationGracePeriodSeconds ?? 30) * 1000;
  if (typeof preStopSeconds !== 'number') fail(o, `${where}: needs a preStop sleep, so endpoints drop the pod before it drains`);
  else if (terminationMs < preStopSeconds * 1000 + graceMs + SHUTDOWN_MARGIN_MS) {
    fail(o, `terminationGracePeriodSeconds (${terminationMs / 1000}) must cover preStop (${preStopSeconds} s) + WAYMARK_SHUTDOWN_GRACE_MS (${graceMs} ms) + ${SHUTDOWN_MARGIN_MS / 1000} s`);
  }
  if (!(pod.topologySpreadConstraints?.length > 0)) fail(o, 'server pods need topologySpreadConstraints');
}
