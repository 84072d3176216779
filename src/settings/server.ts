// The settings of `rmbg serve` and createServer() (with the engine's, settings/engine.ts): every flag, option,
// default and bound of the server is a row here.

import type { SettingsTable } from './setting.js';

/** The longest a Node timer waits (2^31 - 1 ms); a longer one fires at once. */
const MAX_TIMER_SECONDS = 2_147_483;

export const SERVER_SETTINGS = {
  host: { type: 'text', placeholder: 'host', default: '127.0.0.1', help: 'address to listen on' },
  port: { type: 'whole', min: 0, max: 65535, default: 5000, help: 'port to listen on (0: any free port)' },
  dataDir: {
    type: 'text',
    placeholder: 'dir',
    env: 'RMBG_DATA_DIR',
    help: 'data directory of the local service: its SQLite store, its lock, the models added with `rmbg models add`',
    defaultText: "the platform's user data folder",
  },
  store: {
    type: 'text',
    placeholder: 'url',
    env: 'RMBG_STORE_URL',
    help: 'the store: postgres://… (shared by several servers, docs/deploy.md), or a SQLite file path or sqlite:path',
    defaultText: "the data directory's SQLite file",
  },
  creditsPerImage: {
    type: 'whole',
    min: 0,
    default: 1,
    help: 'credits charged per processed image, any size',
  },
  rateLimit: { type: 'whole', min: 1, default: 60, help: 'requests per minute per API key' },
  maxQueue: { type: 'whole', min: 0, default: 16, help: 'requests waiting for the model before 503 service_busy' },
  processingTimeout: {
    type: 'whole',
    min: 1,
    max: MAX_TIMER_SECONDS,
    default: 120,
    unit: 'seconds',
    help: 'processing time limit, waiting for the model included, before 504 and a refund',
  },
  bodyTimeout: {
    type: 'whole',
    min: 1,
    max: MAX_TIMER_SECONDS,
    default: 30,
    unit: 'seconds',
    help: 'time to receive a request body before 408',
  },
  headersTimeout: {
    type: 'whole',
    min: 1,
    max: 3600,
    default: 10,
    unit: 'seconds',
    help: 'time to receive the request headers before 408 and a closed connection',
  },
  leaseTime: {
    type: 'whole',
    min: 1,
    max: 86_400,
    default: 30,
    unit: 'seconds',
    help: 'lease of a request in progress (renewed while it runs); another server refunds it once it expires',
  },
  maxConnections: {
    type: 'whole',
    min: 1,
    max: 1_000_000,
    default: 512,
    help: 'open connections at once; more are closed on arrival',
  },
  maxUploads: { type: 'whole', min: 1, default: 16, help: 'request bodies received at once before 503 service_busy' },
  maxUrlFetches: { type: 'whole', min: 1, default: 8, help: 'image_url downloads at once before 503 service_busy' },
  maxInFlightPerKey: {
    type: 'whole',
    min: 1,
    default: 4,
    help: 'requests of one API key in progress at once before 429 rate_limited',
  },
  maxAuthFailures: {
    type: 'whole',
    min: 1,
    default: 30,
    help: 'failed authentications per client address and minute before 429',
  },
  metricsToken: {
    type: 'text',
    placeholder: 'token',
    env: 'RMBG_METRICS_TOKEN',
    help: 'let GET /metrics be read from any address with "Authorization: Bearer <token>"; on the command line it shows in `ps`: prefer the environment or --metrics-token-file',
    doc: 'let GET /metrics be read from any address with "Authorization: Bearer <token>"',
    defaultText: 'none: /metrics answers loopback callers only',
  },
  metricsTokenFile: {
    type: 'text',
    placeholder: 'path',
    help: 'read the metrics token from this file (surrounding whitespace ignored) instead',
    defaultText: 'none',
  },
  trustProxy: {
    type: 'list',
    placeholder: 'addresses',
    help: 'proxies (IP addresses or CIDR blocks; comma-separated, repeatable) whose X-Forwarded-For names the client (docs/deploy.md)',
    doc: 'proxies (IP addresses or CIDR blocks) whose X-Forwarded-For names the client (docs/deploy.md)',
    defaultText: 'none',
  },
  ui: {
    type: 'switch',
    default: true,
    help: 'do not serve the web page at / (the API only)',
    doc: 'serve the web page at / (drop photos, see results; it uses the API like any client)',
  },
  allowPrivateUrls: {
    type: 'switch',
    default: false,
    help: 'FOR LOCAL TESTING ONLY: let image_url reach private and loopback addresses',
  },
} as const satisfies SettingsTable;
