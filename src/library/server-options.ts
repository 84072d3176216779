// The options of `rmbg serve` and of createServer(), with their defaults, in one place: the command's flags
// are these names in kebab-case. Nothing heavy is imported here (the CLI's --help reads it).

import type { Device, DeviceReport } from '../api/device.js';

export interface ServerOptions {
  /** Address to listen on. Default 127.0.0.1. */
  host?: string;
  /** Port to listen on; 0 picks a free port. Default 5000. */
  port?: number;
  /** Folder of the SQLite store (keys, credits, idempotency records) when no `store` is given. Default: RMBG_DATA_DIR, else the platform's user data folder. */
  dataDir?: string;
  /**
   * The store: a postgres:// or postgresql:// URL (several servers share one database), a SQLite file path or
   * sqlite: URL. Default: RMBG_STORE_URL, else the SQLite file of dataDir.
   */
  store?: string;
  /** Seconds a request in progress is leased for (renewed while it runs); another server refunds it after. Default 30. */
  leaseTime?: number;
  /**
   * Lets GET /metrics be read from any address with `Authorization: Bearer <token>`; without it, loopback only.
   * Default: RMBG_METRICS_TOKEN (on the command line a token shows in `ps`: prefer it, or metricsTokenFile).
   */
  metricsToken?: string;
  /** A file holding the metrics token (surrounding whitespace ignored), instead of metricsToken. */
  metricsTokenFile?: string;
  /**
   * Proxies (IP addresses or CIDR blocks, e.g. ['10.0.0.5', '10.1.0.0/16']) whose X-Forwarded-For gives the
   * client's address; a request through one is never a loopback caller of /metrics. Default: none.
   */
  trustProxy?: readonly string[];
  /** Credits charged per processed image, any size. Default 1. */
  creditsPerImage?: number;
  /** Requests per minute per API key. Default 60. */
  rateLimit?: number;
  /** Requests that may wait for the model before 503 service_busy. Default 16. */
  maxQueue?: number;
  /** Seconds of processing before 504 and a refund. Default 120. */
  processingTimeout?: number;
  /** Seconds to receive a request body before 408. Default 30. */
  bodyTimeout?: number;
  /** Seconds to receive a request's headers before the connection is closed (408). Default 10. */
  headersTimeout?: number;
  /** Open connections at once; more are closed on arrival. Default 512. */
  maxConnections?: number;
  /** Request bodies being received at once (all keys); one more gets 503 service_busy. Default 16. */
  maxUploads?: number;
  /** image_url downloads at once (all keys); one more gets 503 service_busy. Default 8. */
  maxUrlFetches?: number;
  /** Requests of one API key in progress at once; one more gets 429 rate_limited. Default 4. */
  maxInFlightPerKey?: number;
  /** Failed authentications (missing or unknown key) per client address and minute before 429. Default 30. */
  maxAuthFailures?: number;
  /** Model name or .onnx path. Default: the manifest's default model. */
  model?: string;
  /**
   * Where the model runs: `auto` (the GPU when a hardware one works, else the CPU), `gpu` (or the server does
   * not start: `device_unavailable`), `cpu`. Default: RMBG_DEVICE, else `rmbg config set device`, else auto.
   */
  device?: Device;
  /** Serve the web page at `/` (drop photos, see results; it uses the API like any client). Default true; `--no-ui`. */
  ui?: boolean;
  /** FOR LOCAL TESTING ONLY: let image_url reach private and loopback addresses. */
  allowPrivateUrls?: boolean;
}

export interface RmbgServer {
  /** e.g. http://127.0.0.1:5000 (the real port when port 0 was asked for). */
  url: string;
  /** Where the model runs, and why. */
  device: DeviceReport;
  /** Stops accepting, lets requests in flight finish, then releases the model, the store and the data directory. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export const SERVER_DEFAULTS = {
  host: '127.0.0.1',
  port: 5000,
  creditsPerImage: 1,
  rateLimit: 60,
  maxQueue: 16,
  processingTimeout: 120,
  bodyTimeout: 30,
  ui: true,
  leaseTime: 30,
  headersTimeout: 10,
  maxConnections: 512,
  maxUploads: 16,
  maxUrlFetches: 8,
  maxInFlightPerKey: 4,
  maxAuthFailures: 30,
} as const satisfies ServerOptions;

/** The environment variable of metricsToken (a secret: kept out of the process's arguments). */
export const METRICS_TOKEN_ENV = 'RMBG_METRICS_TOKEN';

/** Whole-number options and their [min, max]. */
export const SERVER_BOUNDS = {
  port: [0, 65535],
  creditsPerImage: [0, Number.MAX_SAFE_INTEGER],
  rateLimit: [1, Number.MAX_SAFE_INTEGER],
  maxQueue: [0, Number.MAX_SAFE_INTEGER],
  processingTimeout: [1, Number.MAX_SAFE_INTEGER],
  bodyTimeout: [1, Number.MAX_SAFE_INTEGER],
  leaseTime: [1, 86_400],
  headersTimeout: [1, 3600],
  maxConnections: [1, 1_000_000],
  maxUploads: [1, Number.MAX_SAFE_INTEGER],
  maxUrlFetches: [1, Number.MAX_SAFE_INTEGER],
  maxInFlightPerKey: [1, Number.MAX_SAFE_INTEGER],
  maxAuthFailures: [1, Number.MAX_SAFE_INTEGER],
} as const satisfies Partial<Record<keyof ServerOptions, readonly [number, number]>>;

/** The flag of an option: rateLimit → --rate-limit. */
export const flagOf = (name: string): string => `--${name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
