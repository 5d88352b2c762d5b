/**
 * Unleash's Helm chart for Unleash Edge (Unleash/helm-charts, `charts/unleash-edge` 3.1.4, app
 * v20.1.10): the default values its container is made of, and the container spec its
 * `templates/deployment.yaml` renders from values, written out here as data and a function (no
 * Helm where the tests run). Only what reaches the container is kept: image, args, env, envFrom,
 * port and probes.
 */

export interface ExecProbe {
  exec: { command: string[] };
  initialDelaySeconds: number;
  timeoutSeconds: number;
  periodSeconds: number;
  successThreshold: number;
  failureThreshold: number;
}

export interface EdgeChartValues {
  image: { repository: string; tag: string };
  edge: { upstreamUrl: string; logLevel: string; logFormat: string; command: string[]; port: number };
  env: Array<{ name: string; value: string }>;
  /** The name of a Secret whose keys become variables (`TOKENS`, …); empty: none. */
  existingSecrets: string;
  livenessProbe: ExecProbe;
  readinessProbe: ExecProbe;
}

/** The chart's `values.yaml` defaults (the parts above). */
export const EDGE_CHART_DEFAULTS: EdgeChartValues = {
  image: { repository: 'unleashorg/unleash-edge', tag: '' },
  edge: {
    upstreamUrl: 'http://unleash.unleash:4242',
    logLevel: 'warn',
    logFormat: 'json',
    command: ['edge'],
    port: 3063,
  },
  env: [],
  existingSecrets: '',
  livenessProbe: {
    exec: { command: ['/app/unleash-edge', 'health'] },
    initialDelaySeconds: 10,
    timeoutSeconds: 10,
    periodSeconds: 10,
    successThreshold: 1,
    failureThreshold: 5,
  },
  readinessProbe: {
    exec: { command: ['/app/unleash-edge', 'health'] },
    initialDelaySeconds: 10,
    timeoutSeconds: 10,
    periodSeconds: 10,
    successThreshold: 1,
    failureThreshold: 1,
  },
};

/** The chart's app version: the image tag when `image.tag` is empty. */
export const EDGE_CHART_APP_VERSION = 'v20.1.10';

export interface ContainerSpec {
  image: string;
  args: string[];
  env: Array<{ name: string; value: string }>;
  envFrom: Array<{ secretRef: { name: string } }>;
  ports: Array<{ name: string; containerPort: number; protocol: 'TCP' }>;
  livenessProbe: ExecProbe;
  readinessProbe: ExecProbe;
}

/** What `templates/deployment.yaml` makes of the values for the container (its exec-probe branch). */
export function renderContainer(values: EdgeChartValues): ContainerSpec {
  return {
    image: `${values.image.repository}:${values.image.tag || EDGE_CHART_APP_VERSION}`,
    args: values.edge.command,
    env: [
      { name: 'UPSTREAM_URL', value: values.edge.upstreamUrl },
      ...(values.edge.logLevel ? [{ name: 'RUST_LOG', value: values.edge.logLevel }] : []),
      ...(values.edge.logFormat ? [{ name: 'LOG_FORMAT', value: values.edge.logFormat }] : []),
      ...values.env,
    ],
    envFrom: values.existingSecrets ? [{ secretRef: { name: values.existingSecrets } }] : [],
    ports: [{ name: 'http', containerPort: values.edge.port, protocol: 'TCP' }],
    livenessProbe: values.livenessProbe,
    readinessProbe: values.readinessProbe,
  };
}
