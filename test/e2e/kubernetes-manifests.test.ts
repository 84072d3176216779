// The Kubernetes manifests (deploy/kubernetes, issue #39) as a cluster and rmbg would take them: every object
// valid against the Kubernetes API's schemas (kubernetes-models), and what they say of rmbg true of rmbg: the
// server's flags and environment variables are its settings rows', the probes' paths answer 200 on a real
// `rmbg serve` started with the Deployment's own arguments, and the ports, selectors and grace period agree.

import { readFileSync } from 'node:fs';
import { BlockList, isIPv4 } from 'node:net';
import { join } from 'node:path';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CALL_TABLE, ENGINE_SETTINGS, SERVE_TABLE, SERVER_SETTINGS } from '../../src/settings/index.js';
import { flagOf, type SettingsTable } from '../../src/settings/setting.js';
import { ROOT, type ServeProcess, startIdentityServe, tempDataDir } from '../helpers/serve-harness.js';

const DIR = join(ROOT, 'deploy', 'kubernetes');

/** The model of each kind the manifests use: its validate() checks an object against the API's schema. */
const MODELS: Record<string, { new (data: never): { validate(): void } }> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'batch/v1/Job': Job,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
};

// biome-ignore lint/suspicious/noExplicitAny: manifests are checked field by field below, after their schema.
type Manifest = Record<string, any>;

/** The objects of every file that kustomization.yaml lists, in its order. */
function loadManifests(): Manifest[] {
  const kustomization = parse(join(DIR, 'kustomization.yaml'))[0] as Manifest;
  return (kustomization.resources as string[]).flatMap((file) => parse(join(DIR, file)));
}

function parse(path: string): Manifest[] {
  return parseAllDocuments(readFileSync(path, 'utf8')).map((document) => {
    if (document.errors.length > 0) throw new Error(`${path}: ${document.errors[0]?.message}`);
    return document.toJS() as Manifest;
  });
}

const manifests = loadManifests();
const only = (kind: string): Manifest => {
  const found = manifests.filter((manifest) => manifest.kind === kind);
  expect(found, `one ${kind}`).toHaveLength(1);
  return found[0] as Manifest;
};

/** Every flag of `rmbg serve`, from its settings rows. */
const serveFlags = new Set(Object.entries(SERVE_TABLE as SettingsTable).map(([name, row]) => flagOf(name, row)));
/** Every environment variable a settings row reads. */
const settingEnv = new Set(
  [SERVE_TABLE, CALL_TABLE, ENGINE_SETTINGS].flatMap((table) =>
    Object.values(table as SettingsTable).flatMap((row) => (row.env ? [row.env] : [])),
  ),
);

/** The container's environment variable names: its own and those of the ConfigMaps it reads. */
function envNames(container: Manifest): string[] {
  const fromMaps = ((container.envFrom ?? []) as Manifest[]).flatMap((source) => {
    const map = manifests.find(
      (manifest) => manifest.kind === 'ConfigMap' && manifest.metadata.name === source.configMapRef?.name,
    );
    expect(map, `ConfigMap ${source.configMapRef?.name}`).toBeDefined();
    return Object.keys(map?.data ?? {});
  });
  return [...fromMaps, ...((container.env ?? []) as Manifest[]).map((variable) => variable.name as string)];
}

/** `--name value` pairs of the server's arguments after `serve` (a flag without a value maps to true). */
function flagsOf(args: string[]): Map<string, string | true> {
  expect(args[0]).toBe('serve');
  const flags = new Map<string, string | true>();
  for (let n = 1; n < args.length; n++) {
    const flag = args[n] as string;
    expect(flag, `argument ${n}: a flag`).toMatch(/^--/);
    const value = args[n + 1];
    if (value !== undefined && !value.startsWith('--')) {
      flags.set(flag, value);
      n++;
    } else {
      flags.set(flag, true);
    }
  }
  return flags;
}

const deployment = only('Deployment');
const pod = deployment.spec.template;
const server = pod.spec.containers.find((container: Manifest) => container.name === 'rmbg') as Manifest;

describe('the Kubernetes manifests', () => {
  it.each(manifests.map((manifest) => [`${manifest.kind} ${manifest.metadata?.name}`, manifest]))(
    '%s is valid against the Kubernetes API schema',
    (_name, manifest) => {
      const model = MODELS[`${manifest.apiVersion}/${manifest.kind}`];
      expect(model, `a schema for ${manifest.apiVersion} ${manifest.kind}`).toBeDefined();
      expect(() => new (model as NonNullable<typeof model>)(manifest as never).validate()).not.toThrow();
    },
  );

  it("passes `rmbg serve` only its own flags, and its port is the container's, the probes' and the Service's", () => {
    const flags = flagsOf(server.args);
    for (const flag of flags.keys()) expect(serveFlags, `${flag} is a flag of rmbg serve`).toContain(flag);
    expect(flags.get('--host')).toBe('0.0.0.0');
    const port = Number(flags.get('--port'));
    const http = (server.ports as Manifest[]).find((entry) => entry.name === 'http');
    expect(http?.containerPort).toBe(port);
    const portOf = (named: number | string) => (named === http?.name ? http?.containerPort : named);
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe'])
      expect(portOf(server[probe]?.httpGet?.port), `${probe}'s port`).toBe(port);
    const service = only('Service');
    expect(portOf(service.spec.ports[0].targetPort)).toBe(port);
  });

  it('sets only environment variables that rmbg or node-postgres reads', () => {
    const job = only('Job');
    for (const container of [server, ...job.spec.template.spec.containers]) {
      for (const name of envNames(container)) {
        if (name === 'PGPASSWORD') continue; // node-postgres' own
        expect(settingEnv, `${name} is a settings row's environment variable`).toContain(name);
      }
      const password = (container.env as Manifest[]).find((variable) => variable.name === 'PGPASSWORD');
      expect(password?.valueFrom?.secretKeyRef?.name, 'the database password from a Secret').toBe('rmbg-db');
      expect(envNames(container)).toContain(SERVER_SETTINGS.store.env);
    }
  });

  it('gives a stopping server the processing time limit to finish, runs it read-only as non-root', () => {
    const preStopSeconds = Number(server.lifecycle.preStop.exec.command[1]);
    expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThan(
      preStopSeconds + SERVER_SETTINGS.processingTimeout.default,
    );
    expect(pod.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
    expect(server.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(server.resources.requests.cpu).toBeDefined();
    expect(server.resources.limits.memory).toBeDefined();
  });

  it('points the Service, the budget and the autoscaler at the Deployment and its pods', () => {
    const labels = pod.metadata.labels;
    expect(deployment.spec.selector.matchLabels).toEqual(labels);
    expect(labels).toMatchObject(only('Service').spec.selector);
    expect(labels).toMatchObject(only('PodDisruptionBudget').spec.selector.matchLabels);
    const autoscaler = only('HorizontalPodAutoscaler');
    expect(autoscaler.spec.scaleTargetRef).toEqual({
      apiVersion: deployment.apiVersion,
      kind: deployment.kind,
      name: deployment.metadata.name,
    });
    expect(autoscaler.spec.metrics[0].resource.name).toBe('cpu');
  });

  it("believes X-Forwarded-For from private addresses only, which the NetworkPolicy leaves to the controller's pods", () => {
    const trusted = String(flagsOf(server.args).get('--trust-proxy'));
    const [network = '', prefix = ''] = trusted.split('/');
    expect(isIPv4(network) && Number(prefix) >= 8, `--trust-proxy ${trusted}: one IPv4 block`).toBe(true);
    const privateRanges = new BlockList();
    privateRanges.addSubnet('10.0.0.0', 8);
    privateRanges.addSubnet('172.16.0.0', 12);
    privateRanges.addSubnet('192.168.0.0', 16);
    expect(privateRanges.check(network), `${trusted} is inside a private range`).toBe(true);

    const policy = only('NetworkPolicy');
    expect(policy.spec.podSelector.matchLabels).toEqual(pod.metadata.labels);
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    expect(policy.spec.ingress).toHaveLength(1);
    const [rule] = policy.spec.ingress as Manifest[];
    expect(rule?.ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
    // Two peers: the controller's namespace, and this namespace's Job pods; nothing open to every pod or address.
    expect(rule?.from).toEqual([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': expect.any(String) } } },
      { podSelector: { matchLabels: only('Job').spec.template.metadata.labels } },
    ]);
  });

  describe('on a real rmbg serve started with the Deployment arguments', () => {
    let serve: ServeProcess;
    afterAll(async () => {
      await serve?.stop();
    });

    it('answers 200 on the path of each probe', async () => {
      // The harness listens on 127.0.0.1:0 (its own --host and --port come first; the manifest's would win).
      const flags = [...flagsOf(server.args)].filter(([flag]) => flag !== '--host' && flag !== '--port');
      serve = await startIdentityServe(
        tempDataDir(),
        flags.flatMap(([flag, value]) => (value === true ? [flag] : [flag, value])),
      );
      for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
        const path = server[probe].httpGet.path as string;
        const answer = await fetch(`${serve.url}${path}`);
        expect(answer.status, `${probe} GET ${path}`).toBe(200);
      }
      expect(server.readinessProbe.httpGet.path).toBe('/readyz');
      expect(server.livenessProbe.httpGet.path).toBe('/healthz');
    });
  });
});
