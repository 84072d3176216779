// The static rules of image_url (api-spec: public, direct HTTPS URL on port 443): checked when the request
// is parsed, so a URL that can never be fetched is a 400 before any charge; the fetcher applies them again.

import { RmbgError } from './errors.js';

export interface ImageUrlTarget {
  url: URL;
  /** Hostname without IPv6 brackets: what DNS, SNI and certificate checks see. */
  host: string;
}

export function parseImageUrl(raw: string): ImageUrlTarget {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RmbgError(
      'invalid_image_url',
      'image_url is not a valid absolute URL; give a direct https:// URL to the image',
    );
  }
  if (url.protocol !== 'https:') {
    throw new RmbgError(
      'invalid_image_url',
      `image_url scheme ${url.protocol.replace(/:$/, '')} is not allowed; only https:// URLs on port 443 are fetched`,
    );
  }
  // WHATWG URL drops the scheme's default port, so any port left here is not 443.
  if (url.port !== '') {
    throw new RmbgError(
      'invalid_image_url',
      `image_url port ${url.port} is not allowed; only port 443 (the https default) is fetched`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new RmbgError(
      'invalid_image_url',
      'image_url must not carry credentials (user:password@); give a public URL that needs none',
    );
  }
  return { url, host: url.hostname.replace(/^\[(.*)\]$/, '$1') };
}
