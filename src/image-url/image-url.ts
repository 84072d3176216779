// Fetches the bytes behind a request's image_url without letting the caller reach our own network:
// https on port 443 only, one DNS resolution whose checked addresses are the only ones connected to, no redirects, capped size and time.

import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { isIP, type LookupFunction } from 'node:net';
import { RmbgError, messageOf } from '../api/errors.js';
import { parseImageUrl, type ImageUrlTarget } from '../api/image-url-rules.js';
import { checkResolvedAddresses, refusedAddress, type ResolvedAddress } from './address-policy.js';
import { resolveHost } from './resolve-host.js';
import type { ImageFetcher } from '../service/types.js';

export interface FetchImageUrlOptions {
  /** Lifts ONLY the public-address check (rmbg serve --allow-private-urls); https, port 443 and no-redirects still apply. */
  allowPrivate: boolean;
  /** One deadline for DNS + connect + TLS + headers + body. */
  timeoutMs: number;
  maxBytes: number;
  /** Aborts the fetch; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** test seam: DNS resolution, defaults to resolveHost (c-ares, off libuv's threadpool) */
  lookup?: (hostname: string) => Promise<Array<{ address: string; family: 4 | 6 }>>;
  /**
   * test seam: PEM CA certificate(s) to trust INSTEAD of the default roots, for in-process tests
   * against a throwaway CA. Production leaves it unset: Node's roots plus NODE_EXTRA_CA_CERTS apply.
   */
  ca?: string | Buffer;
}

const USER_AGENT = 'rmbg (image_url fetcher)';

/** The fetcher as the service's port, with the address policy rmbg serve was started with. */
export function imageUrlFetcher(policy: { allowPrivate: boolean }): ImageFetcher {
  return (url, limits) => fetchImageUrl(url, { ...limits, allowPrivate: policy.allowPrivate });
}

export async function fetchImageUrl(url: string, options: FetchImageUrlOptions): Promise<Buffer> {
  const target = parseImageUrl(url);
  options.signal?.throwIfAborted();

  // One deadline for the whole fetch, reported as the URL's fault: its server was too slow.
  const abort = new AbortController();
  const timer = setTimeout(() => {
    abort.abort(
      new RmbgError(
        'image_url_unreachable',
        `image_url on ${target.host} did not deliver the image within ${options.timeoutMs / 1000} s; give a URL that answers promptly`,
      ),
    );
  }, options.timeoutMs);
  const onCallerAbort = (): void => abort.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onCallerAbort, { once: true });
  try {
    const pinned = await raceAbort(resolveOnce(target.host, options), abort.signal);
    return await download(target, pinned, options, abort.signal);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onCallerAbort);
  }
}

/** The one resolution of the host; its checked addresses are pinned for the connection. */
async function resolveOnce(host: string, options: FetchImageUrlOptions): Promise<readonly ResolvedAddress[]> {
  let addresses: ResolvedAddress[];
  const literalFamily = isIP(host);
  if (literalFamily === 4 || literalFamily === 6) {
    addresses = [{ address: host, family: literalFamily }];
  } else {
    try {
      const lookup = options.lookup ?? resolveHost;
      addresses = await lookup(host);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? messageOf(error);
      const reason = `image_url host ${host} could not be resolved (${code})`;
      // Refused like a private name unless private ones are allowed: the answer must not show which names exist.
      if (!options.allowPrivate) throw refusedAddress(reason);
      throw new RmbgError('image_url_unreachable', reason, { cause: error });
    }
  }
  return checkResolvedAddresses(host, addresses, { allowPrivate: options.allowPrivate });
}

/**
 * A lookup for the socket that answers only the already-checked addresses, so DNS cannot rebind.
 * Handing over all of them lets Node's happy-eyeballs connect fall back, e.g. from a dead IPv6 to IPv4.
 */
function pinnedLookup(pinned: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname, lookupOptions, callback) => {
    const [first] = pinned as [ResolvedAddress];
    if (lookupOptions.all) {
      (callback as unknown as (err: null, addresses: ResolvedAddress[]) => void)(null, [...pinned]);
    } else {
      callback(null, first.address, first.family);
    }
  };
}

function download(
  target: ImageUrlTarget,
  pinned: readonly ResolvedAddress[],
  options: FetchImageUrlOptions,
  signal: AbortSignal,
): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const { url, host } = target;
    const request = https.request({
      host,
      port: 443,
      path: `${url.pathname}${url.search}`,
      method: 'GET',
      headers: { host: url.host, 'user-agent': USER_AGENT, accept: 'image/*', 'accept-encoding': 'identity' },
      // A fresh connection per fetch: a pooled socket could belong to another resolution of the host.
      agent: false,
      lookup: pinnedLookup(pinned),
      // SNI and the certificate check use the hostname; TLS forbids an IP address as SNI.
      ...(isIP(host) === 0 ? { servername: host } : {}),
      ...(options.ca === undefined ? {} : { ca: options.ca }),
      signal,
    });
    const fail = (error: unknown): void => {
      request.destroy();
      reject(toFetchError(error, signal, host));
    };
    request.on('error', fail);
    request.on('response', (response) => {
      response.on('error', fail);
      try {
        checkResponseHead(response, options.maxBytes, host);
      } catch (error) {
        fail(error);
        return;
      }
      readBody(response, options.maxBytes, host).then(resolve, fail);
    });
    request.end();
  });
}

function checkResponseHead(response: IncomingMessage, maxBytes: number, host: string): void {
  const status = response.statusCode ?? 0;
  if (status >= 300 && status < 400) {
    throw new RmbgError(
      'invalid_image_url',
      `image_url on ${host} answered ${status} (redirect); redirects are not followed; give the direct URL of the image`,
    );
  }
  if (status < 200 || status >= 300) {
    throw new RmbgError(
      'image_url_unreachable',
      `image_url on ${host} answered HTTP ${status}; only a 2xx answer carrying the image is accepted`,
    );
  }
  const declared = Number(response.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    throw tooLarge(host, maxBytes, `declares ${declared} bytes (Content-Length)`);
  }
}

async function readBody(response: IncomingMessage, maxBytes: number, host: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    received += chunk.length;
    // Stop at the first byte past the limit rather than buffering the rest of an oversized answer.
    if (received > maxBytes) throw tooLarge(host, maxBytes, `sent more than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  if (!response.complete) {
    throw new RmbgError(
      'image_url_unreachable',
      `image_url on ${host} closed the connection before the whole image arrived`,
    );
  }
  return Buffer.concat(chunks, received);
}

function tooLarge(host: string, maxBytes: number, detail: string): RmbgError {
  return new RmbgError(
    'file_too_large',
    `image_url on ${host} ${detail}; image data may be at most ${formatBytes(maxBytes)}`,
  );
}

function formatBytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

function toFetchError(error: unknown, signal: AbortSignal, host: string): unknown {
  // Aborts carry their own reason: the caller's (client gone) or our deadline's.
  if (signal.aborted) return signal.reason;
  if (error instanceof RmbgError) return error;
  const err = error as NodeJS.ErrnoException;
  const reason = err.code === undefined ? err.message : `${err.message} (${err.code})`;
  return new RmbgError('image_url_unreachable', `image_url on ${host} could not be fetched: ${reason}`, {
    cause: error,
  });
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
