// The operations endpoints beside the API: GET /healthz (the process answers), GET /readyz (the store is
// reachable and migrated, the model loaded: 503 with Retry-After otherwise) and GET /metrics (Prometheus).

import type { FastifyReply, FastifyRequest } from 'fastify';
import { RmbgError, messageOf } from '../api/errors.js';
import type { DeviceReport } from '../api/device.js';
import type { Service } from '../service/index.js';
import { mayReadMetrics, type ServerMetrics } from './metrics.js';
import { headerValue } from './headers.js';
import type { TrustedProxies } from './trusted-proxies.js';

export function healthHandler() {
  return async (_request: FastifyRequest, reply: FastifyReply) =>
    reply.type('application/json; charset=utf-8').send({ status: 'ok' });
}

/** The model is loaded before the server listens (createServer), so a listening server only waits for its store. */
export function readyHandler(service: Partial<Pick<Service, 'checkReady'>>, device: DeviceReport | undefined) {
  return async (_request: FastifyRequest, reply: FastifyReply) => {
    try {
      await service.checkReady?.();
    } catch (error) {
      throw new RmbgError('service_unavailable', `not ready: ${messageOf(error)}`, {
        retryAfterSeconds: 2,
        cause: error,
      });
    }
    return reply
      .type('application/json; charset=utf-8')
      .send({ status: 'ready', ...(device && { device: device.device }) });
  };
}

/** Headers a proxy adds: a loopback peer that sends one is a proxy on this machine, not a caller on it. */
const FORWARDING_HEADERS = ['x-forwarded-for', 'forwarded', 'x-real-ip'];

/** `openToLoopback`: metricsOpenToLoopback of the server (false: a token is the only way in). */
export function metricsHandler(
  metrics: ServerMetrics,
  token: string | undefined,
  proxies: TrustedProxies,
  openToLoopback: boolean,
) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    // The socket's peer, never request.ip: an address read from X-Forwarded-For must not grant access.
    const peer = request.socket.remoteAddress;
    const forwarded =
      !openToLoopback || proxies.trusts(peer) || FORWARDING_HEADERS.some((name) => request.headers[name] !== undefined);
    if (!mayReadMetrics(peer, headerValue(request.headers, 'authorization'), token, forwarded)) {
      // Not found rather than forbidden: to anyone else the endpoint does not exist.
      throw new RmbgError(
        'not_found',
        'GET /metrics needs the server\'s --metrics-token as "Authorization: Bearer <token>" ' +
          '(without one it is served to this machine only, and only while the server listens on loopback and trusts no proxy)',
      );
    }
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  };
}
