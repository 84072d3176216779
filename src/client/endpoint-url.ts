// Builds endpoint URLs from a user-supplied API base address. The spec's rule: the /v1.0 prefix is kept
// when the base changes, so `https://h/api` becomes `https://h/api/v1.0/removebg` and `…/v1.0` is not doubled.

import { RmbgError } from '../api/errors.js';

export const API_VERSION_PREFIX = '/v1.0';

export type Endpoint = 'removebg' | 'account';

/** Parses and normalises a base address; throws usage_error for anything that is not an http(s) URL. */
export function parseBaseUrl(base: string): URL {
  let url: URL;
  try {
    url = new URL(base.trim());
  } catch {
    throw new RmbgError(
      'usage_error',
      `API URL must be an absolute http:// or https:// address, e.g. https://api.example.com; got '${base}'`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RmbgError('usage_error', `API URL must use http:// or https://; got '${url.protocol}' in '${base}'`);
  }
  if (url.username || url.password) {
    // Credentials in the URL would end up in logs and journals; the key travels in X-API-Key only.
    throw new RmbgError(
      'usage_error',
      'API URL must not contain a user name or password; give the key as `apiKey`, which is sent in the X-API-Key header',
    );
  }
  url.search = '';
  url.hash = '';
  let path = url.pathname.replace(/\/+$/, '');
  if (!path.endsWith(API_VERSION_PREFIX)) path += API_VERSION_PREFIX;
  url.pathname = path;
  return url;
}

/** The full URL of one endpoint under a base address. */
export function endpointUrl(base: string | URL, endpoint: Endpoint): string {
  const root = typeof base === 'string' ? parseBaseUrl(base) : base;
  return `${root.origin}${root.pathname}/${endpoint}`;
}
