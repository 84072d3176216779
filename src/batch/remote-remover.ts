// The Remover for an API server: each image is one POST /v1.0/removebg through the retrying client.
// It reports throttling (429/503 retries) so the batch can lower its concurrency.

import { createApiClient, type ApiClient } from '../client/api-client.js';
import type { OutputFormat } from '../api/options.js';
import { RmbgError } from '../api/errors.js';
import type { Remover } from './remover.js';

/** A balance shown in a message is not worth a long wait. */
const BALANCE_TIMEOUT_MS = 10_000;

const FORMAT_OF_MIME: Record<string, OutputFormat> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' };

export interface RemoteRemover extends Remover {
  readonly client: ApiClient;
  onThrottle(listener: () => void): void;
}

export function remoteRemover(options: { baseUrl: string; apiKey: string; timeoutMs: number }): RemoteRemover {
  const listeners: Array<() => void> = [];
  const client = createApiClient({
    ...options,
    onRetry: (info) => {
      if (info.error.status === 429 || info.error.status === 503) for (const listener of listeners) listener();
    },
  });
  return {
    mode: 'remote',
    client,
    onThrottle: (listener) => listeners.push(listener),
    async remove(image, removeOptions, call) {
      const result = await client.removeBackground(image, removeOptions, call);
      const format = FORMAT_OF_MIME[result.mimeType];
      if (!format) throw new RmbgError('upstream_error', `the API server answered with ${result.mimeType}, not a PNG, JPG or WebP image`);
      return { data: result.data, format, width: result.width, height: result.height, creditsCharged: result.creditsCharged, replayed: result.replayed };
    },
    creditsLeft: () =>
      client.getAccount({ signal: AbortSignal.timeout(BALANCE_TIMEOUT_MS) }).then(
        (account) => account.data.attributes.credits.total,
        () => undefined,
      ),
    close: async () => undefined,
  };
}
