// The server's Prometheus metrics (prom-client, one registry per server): requests by route and status, a
// latency histogram, queue depth and requests in flight, credits charged and refunded, inference seconds
// and leases expired. The service reports through its observer port; this module only counts.

import { isIP } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import client from 'prom-client';
import type { DeviceReport } from '../api/device.js';
import type { ServiceObserver, ServiceStatus } from '../service/index.js';
import type { TrustedProxies } from './trusted-proxies.js';

export interface ServerMetrics {
  readonly registry: client.Registry;
  /** Hand this to createService. */
  readonly observer: ServiceObserver;
  /** The service's status, read at each scrape (set once the service exists). */
  status?: () => ServiceStatus;
  observeRequest(route: string, method: string, status: number, seconds: number): void;
  /** Where the model runs: rmbg_device_info{requested, device} 1. */
  setDevice(report: DeviceReport): void;
}

export function createMetrics(): ServerMetrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: 'rmbg_' });
  const requests = new client.Counter({
    name: 'rmbg_http_requests_total',
    help: 'HTTP requests answered, by route and status',
    labelNames: ['route', 'method', 'status'],
    registers: [registry],
  });
  const latency = new client.Histogram({
    name: 'rmbg_http_request_duration_seconds',
    help: 'Time from request to answer, by route',
    labelNames: ['route'],
    buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120],
    registers: [registry],
  });
  const charged = new client.Counter({
    name: 'rmbg_credits_charged_total',
    help: 'Credits charged (before any refund)',
    registers: [registry],
  });
  const refunded = new client.Counter({
    name: 'rmbg_credits_refunded_total',
    help: 'Credits refunded by this server (failed requests, expired leases of any server)',
    registers: [registry],
  });
  const inference = new client.Histogram({
    name: 'rmbg_inference_seconds',
    help: 'Engine time per image',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [registry],
  });
  const device = new client.Gauge({
    name: 'rmbg_device_info',
    help: "Where the model runs: device 'gpu' (WebGPU) or 'cpu', and the device asked for",
    labelNames: ['requested', 'device'],
    registers: [registry],
  });
  const expired = new client.Counter({
    name: 'rmbg_leases_expired_total',
    help: 'Requests whose lease expired (their server died) settled as failed by this server',
    registers: [registry],
  });
  const metrics: ServerMetrics = {
    registry,
    observer: {
      charged: (credits) => charged.inc(credits),
      refunded: (credits) => refunded.inc(credits),
      leasesExpired: (count) => expired.inc(count),
      inference: (seconds) => inference.observe(seconds),
    },
    setDevice(report) {
      device.reset();
      device.set({ requested: report.requested, device: report.device }, 1);
    },
    observeRequest(route, method, status, seconds) {
      requests.inc({ route, method, status: String(status) });
      latency.observe({ route }, seconds);
    },
  };
  new client.Gauge({
    name: 'rmbg_queue_depth',
    help: 'Images admitted to the engine: the one running and those waiting',
    registers: [registry],
    collect() {
      this.set(metrics.status?.().queued ?? 0);
    },
  });
  new client.Gauge({
    name: 'rmbg_requests_in_flight',
    help: 'API requests being handled',
    registers: [registry],
    collect() {
      this.set(metrics.status?.().inFlight ?? 0);
    },
  });
  return metrics;
}

/**
 * Whether /metrics without a token may be read by callers on this machine. Not when the server listens beyond
 * loopback or trusts a proxy: a proxy or TLS terminator on this machine that adds no forwarding header would
 * pass every outside caller on as a loopback one.
 */
export function metricsOpenToLoopback(host: string, proxies: Pick<TrustedProxies, 'entries'>): boolean {
  const address = host.replace(/^\[|\]$/g, '');
  return proxies.entries.length === 0 && (address === 'localhost' || isLoopbackAddress(address));
}

function isLoopbackAddress(text: string): boolean {
  const address = text.replace(/^::ffff:/, '');
  return isIP(address) !== 0 && (address === '::1' || address.startsWith('127.'));
}

/**
 * Who may read /metrics: with a token, whoever sends `Authorization: Bearer <token>`; without one, callers on
 * this machine only (loopback), since metrics reveal traffic and balances moving. A request that came
 * through a proxy (`forwarded`) is never a loopback caller, whatever the proxy's own address is.
 */
export function mayReadMetrics(
  remoteAddress: string | undefined,
  authorization: string | undefined,
  token: string | undefined,
  forwarded: boolean,
): boolean {
  if (token !== undefined) {
    const given = Buffer.from(/^Bearer (.+)$/.exec(authorization ?? '')?.[1] ?? '');
    const wanted = Buffer.from(token);
    return given.length === wanted.length && timingSafeEqual(given, wanted);
  }
  if (forwarded) return false;
  return isLoopbackAddress(remoteAddress ?? '');
}
