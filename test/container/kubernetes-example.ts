import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseYamlDocuments, type YamlValue } from '../support/simple-yaml';

export const KUBERNETES_EXAMPLE = path.resolve(__dirname, '../../examples/kubernetes/flags-proxy.yaml');

type YamlMap = { [key: string]: YamlValue };

function at(value: YamlValue | undefined, ...keys: Array<string | number>): YamlValue | undefined {
  let current = value;
  for (const key of keys) {
    if (current === null || typeof current !== 'object' || current === undefined) return undefined;
    current = Array.isArray(current) ? current[key as number] : (current as YamlMap)[key as string];
  }
  return current;
}

/** An environment entry of the container: a value, or a reference to a Secret's key. */
export type EnvEntry =
  { name: string; value: string } | { name: string; secret: { name: string; key: string } };

/** What the example declares that a test can check and call. */
export interface KubernetesExample {
  containerPort: number;
  env: EnvEntry[];
  liveness: { path: string; port: number };
  readiness: { path: string; port: number };
  /** The Service's port and the container port its `targetPort` names. */
  service: { port: number; targetPort: number };
  /** The pod's Prometheus annotations. */
  scrape: { path: string; port: number } | undefined;
  runAsNonRoot: boolean;
}

/** Reads the Deployment and Service of `examples/kubernetes/flags-proxy.yaml`. */
export function readKubernetesExample(file = KUBERNETES_EXAMPLE): KubernetesExample {
  const docs = parseYamlDocuments(readFileSync(file, 'utf8'));
  const deployment = docs.find((d) => at(d, 'kind') === 'Deployment');
  const service = docs.find((d) => at(d, 'kind') === 'Service');
  if (!deployment || !service) throw new Error(`${file} must hold a Deployment and a Service`);
  const pod = at(deployment, 'spec', 'template');
  const container = at(pod, 'spec', 'containers', 0);
  const ports = (at(container, 'ports') as YamlValue[] | undefined) ?? [];
  const named = new Map(ports.map((p) => [String(at(p, 'name')), Number(at(p, 'containerPort'))]));
  const portOf = (value: YamlValue | undefined): number => {
    if (typeof value === 'number') return value;
    const found = named.get(String(value));
    if (found === undefined) throw new Error(`port ${String(value)} is not a container port of ${file}`);
    return found;
  };
  const probe = (name: string) => ({
    path: String(at(container, name, 'httpGet', 'path')),
    port: portOf(at(container, name, 'httpGet', 'port')),
  });
  const env = ((at(container, 'env') as YamlValue[] | undefined) ?? []).map((e): EnvEntry => {
    const name = String(at(e, 'name'));
    const ref = at(e, 'valueFrom', 'secretKeyRef');
    if (ref !== undefined)
      return { name, secret: { name: String(at(ref, 'name')), key: String(at(ref, 'key')) } };
    return { name, value: String(at(e, 'value')) };
  });
  const annotations = at(pod, 'metadata', 'annotations');
  const scrapePath = at(annotations, 'prometheus.io/path');
  return {
    containerPort: Number(at(ports, 0, 'containerPort')),
    env,
    liveness: probe('livenessProbe'),
    readiness: probe('readinessProbe'),
    service: {
      port: Number(at(service, 'spec', 'ports', 0, 'port')),
      targetPort: portOf(at(service, 'spec', 'ports', 0, 'targetPort')),
    },
    scrape:
      scrapePath === undefined
        ? undefined
        : { path: String(scrapePath), port: Number(at(annotations, 'prometheus.io/port')) },
    runAsNonRoot: at(pod, 'spec', 'securityContext', 'runAsNonRoot') === true,
  };
}
