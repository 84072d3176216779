// The fastify app of the API, without listening: routes, content types, request ids, the one error
// handler, 404/405 and load shedding while shutting down. Tests and `rmbg serve` both build it here.

import { randomUUID } from 'node:crypto';
import { createServer, type RequestListener, type Server } from 'node:http';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import type { Socket } from 'node:net';
import { RmbgError } from '../api/errors.js';
import { HEADERS } from '../api/response-headers.js';
import type { DeviceReport } from '../api/device.js';
import type { Service } from '../service/index.js';
import { SERVER_SETTINGS } from '../settings/server.js';
import { defaultsOf, settingsFor, type SettingsFor } from '../settings/setting.js';
import { apiRoutes } from './api-routes.js';
import { writeClientError } from './client-error.js';
import { sendError } from './error-reply.js';
import { metricsOpenToLoopback, type ServerMetrics } from './metrics.js';
import { healthHandler, metricsHandler, readyHandler } from './ops-routes.js';
import { type OverCap, refuseOverCap, shareConnections, shareRequests } from './fair-connections.js';
import { type TrustedProxies, trustedProxies } from './trusted-proxies.js';
import { webPageRoutes } from './web-page.js';
import { UploadPlaces } from '../service/upload-places.js';
import { AnswerSends, payloadBytes } from './answer-sends.js';

/**
 * The app's rows of src/settings (`to: 'app'`: body and headers timeouts, connections, uploads, the web page), by
 * the rows' names, seconds as milliseconds; checked against the rows' bounds by createServer().
 */
export type AppSettings = SettingsFor<typeof SERVER_SETTINGS, 'app'>;

/**
 * The app rows' defaults, for the settings a caller leaves out (tests). All but the web page's: it is served only
 * when asked for (`rmbg serve` passes its row's value, on), so an app built without `ui` serves the API alone.
 */
const { ui: _servedWhenAsked, ...APP_DEFAULTS } = settingsFor(SERVER_SETTINGS, 'app', defaultsOf(SERVER_SETTINGS));

/** The app's settings, each defaulting to its row's (but `ui`, off unless given), and what the app is given to serve. */
export interface AppOptions extends Partial<AppSettings> {
  /** Where the model runs, for /readyz. */
  device?: DeviceReport;
  service: Pick<Service, 'handleRemoveRequest' | 'getAccount'> & Partial<Pick<Service, 'checkReady'>>;
  /** Counts every answer, and serves GET /metrics; without it there is no /metrics. */
  metrics?: ServerMetrics;
  /**
   * Lets /metrics be read from any address with this bearer token. Without it, loopback callers read it only
   * while the server listens on loopback and trusts no proxy (metricsOpenToLoopback).
   */
  metricsToken?: string;
  /** The address the server listens on (default 127.0.0.1), for that rule of /metrics. */
  host?: string;
  /**
   * Proxies (addresses, CIDR blocks) whose X-Forwarded-For gives the client's address (the throttle of failed
   * keys counts by it); a request through one of them is not a loopback caller of /metrics. Default: none.
   */
  trustProxy?: readonly string[];
  logger?: FastifyServerOptions['logger'];
}

/** Seconds a client should wait when the server is shutting down. */
const CLOSING_RETRY_SECONDS = 5;
/** How often Node checks the headers and request timeouts (its default would let a slow client overstay by 30 s). */
const TIMEOUT_CHECK_MS = 1000;
/** Idle time of a kept-alive connection between requests (Node's default). */
export const KEEP_ALIVE_MS = 5000;
/** Slack past headers + body timeouts for Node's request timeout, so the route's own 408 with its body comes first. */
const REQUEST_TIMEOUT_SLACK_MS = 2000;

/** Node's server with its timeouts (fastify's default is none) and at most maxConnections sockets. */
function serverFactory(options: Omit<AppSettings, 'ui'>, proxies: TrustedProxies, overCap: OverCap) {
  return (handler: RequestListener) => {
    const server = createServer(
      {
        headersTimeout: options.headersTimeoutMs,
        requestTimeout: options.headersTimeoutMs + options.bodyTimeoutMs + REQUEST_TIMEOUT_SLACK_MS,
        keepAliveTimeout: KEEP_ALIVE_MS,
        connectionsCheckingInterval: TIMEOUT_CHECK_MS,
      },
      handler,
    );
    server.maxConnections = options.maxConnections;
    shareConnections(server, { ...options, proxies, overCap });
    closeIdleConnectionsAfterPendingReads(server);
    // Expect: 100-continue is answered by the route once the caller is authenticated (Node would send
    // 100 Continue at once, inviting the body before anyone checked the key).
    server.on('checkContinue', handler);
    return server;
  };
}

/** What buildApp gave the routes and hooks of each app (the rest of its settings are read back from Node's server). */
const routeSettings = new WeakMap<
  FastifyInstance,
  Pick<
    AppSettings,
    | 'bodyTimeoutMs'
    | 'maxUploads'
    | 'maxConnectionsPerAddress'
    | 'maxPipelinedRequests'
    | 'sendTimeoutMs'
    | 'sendStallTimeoutMs'
  >
>();

/** The app's settings in force, as Node's server and the routes hold them (a row that reaches neither is missing). */
export function appSettingsOf(app: FastifyInstance): Partial<AppSettings> {
  return {
    ...routeSettings.get(app),
    headersTimeoutMs: app.server.headersTimeout,
    maxConnections: app.server.maxConnections,
    ui: app.hasRoute({ method: 'GET', url: '/' }),
  };
}

export function buildApp(given: AppOptions): FastifyInstance {
  const options = { ...APP_DEFAULTS, ...given };
  const proxies = trustedProxies(options.trustProxy ?? []);
  // The connections over their address's cap: shareConnections lets them in, refuseOverCap answers them.
  const overCap: OverCap = new WeakSet();
  const app = Fastify({
    // request.ip: the socket's peer, or with trusted proxies the first address of X-Forwarded-For, from the
    // right, that is not one of them (proxy-addr's walk, called with our own check of each hop).
    ...(proxies.entries.length > 0 ? { trustProxy: (address: string) => proxies.trusts(address) } : {}),
    logger: options.logger ?? false,
    genReqId: () => randomUUID(),
    // A client-chosen request id would let one client's id show up in another's investigation.
    requestIdHeader: false,
    // fastify's own 503 while closing has a different body; onRequest below answers instead.
    return503OnClosing: false,
    clientErrorHandler: writeClientError,
    frameworkErrors: (error, request, reply) => sendError(error, request, reply),
    serverFactory: serverFactory(options, proxies, overCap),
  });

  // The route reads bodies itself (src/api/request-parsing.ts), streamed and within our limits; fastify's
  // parsers would answer unknown types and bad JSON with errors of their own.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header(HEADERS.requestId, request.id);
    if (closing) {
      throw new RmbgError('service_unavailable', 'the server is shutting down; retry shortly', {
        retryAfterSeconds: CLOSING_RETRY_SECONDS,
      });
    }
  });
  // Answers still being worked on when close() began would otherwise keep their connection alive
  // (and close() waiting) until the keep-alive timeout.
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('Connection', 'close');
  });
  app.addHook(
    'onRequest',
    refuseOverCap({
      overCap,
      maxConnectionsPerAddress: options.maxConnectionsPerAddress,
      maxPipelined: options.maxPipelinedRequests,
    }),
  );
  app.addHook('onRequest', shareRequests(options.maxConnectionsPerAddress, proxies));
  // Every answer, errors included, is sent within the send timeout (and keeps being read) or its connection is cut
  // (Node bounds only the receiving of a request); the bytes of answers being sent count against the server's budget.
  const answers = new AnswerSends({
    sendTimeoutMs: options.sendTimeoutMs,
    sendStallTimeoutMs: options.sendStallTimeoutMs,
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    const sent = answers.track(reply.raw, payload);
    // Sent in slices (a stream): fastify would otherwise send it chunked.
    if (sent !== payload) reply.header('content-length', String(payloadBytes(payload)));
    return sent;
  });
  app.setErrorHandler((error, request, reply) => sendError(error, request, reply));
  const { metrics } = options;
  if (metrics) {
    app.addHook('onResponse', async (request, reply) => {
      metrics.observeRequest(
        request.routeOptions.url ?? 'unmatched',
        request.method,
        reply.statusCode,
        reply.elapsedTime / 1000,
      );
    });
  }

  const uploads = new UploadPlaces(options.maxUploads);
  routeSettings.set(app, {
    bodyTimeoutMs: options.bodyTimeoutMs,
    maxUploads: uploads.size,
    maxConnectionsPerAddress: options.maxConnectionsPerAddress,
    maxPipelinedRequests: options.maxPipelinedRequests,
    sendTimeoutMs: answers.limits.sendTimeoutMs,
    sendStallTimeoutMs: answers.limits.sendStallTimeoutMs,
  });
  const routes = [
    ...apiRoutes({ service: options.service, bodyTimeoutMs: options.bodyTimeoutMs, uploads, answers }),
    ...(options.ui === true ? webPageRoutes() : []),
    { method: 'GET' as const, url: '/healthz', handler: healthHandler() },
    { method: 'GET' as const, url: '/readyz', handler: readyHandler(options.service, options.device) },
    ...(metrics
      ? [
          {
            method: 'GET' as const,
            url: '/metrics',
            handler: metricsHandler(
              metrics,
              options.metricsToken,
              proxies,
              metricsOpenToLoopback(options.host ?? '127.0.0.1', proxies),
            ),
          },
        ]
      : []),
  ];
  for (const route of routes) app.route(route);

  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0];
    const allowed = routes.filter((route) => route.url === path).map((route) => route.method);
    if (allowed.length === 0) {
      return sendError(
        new RmbgError(
          'not_found',
          `no endpoint ${request.method} ${path}; the API has POST /v1.0/removebg and GET /v1.0/account`,
        ),
        request,
        reply,
      );
    }
    const allow = allowed.flatMap((method) => (method === 'GET' ? ['GET', 'HEAD'] : [method])).join(', ');
    reply.header('Allow', allow);
    return sendError(
      new RmbgError('method_not_allowed', `${path} accepts ${allow}; got ${request.method}`),
      request,
      reply,
    );
  });
  return app;
}

/**
 * Closes a kept-alive connection idle past its timeout one turn of the loop later, and only if nothing arrived:
 * after the loop was held (the engine's JS work on a large image) a request sent meanwhile is still unread, and
 * Node's own close would reset it. Node arms this timer only between requests, so the socket is idle.
 */
function closeIdleConnectionsAfterPendingReads(server: Server): void {
  // A 'timeout' listener replaces Node's own destroy; libuv reads the sockets before setImmediate callbacks run.
  server.on('timeout', (socket: Socket) => {
    const readBefore = socket.bytesRead;
    setImmediate(() => {
      if (socket.bytesRead === readBefore) socket.destroy();
    });
  });
}
