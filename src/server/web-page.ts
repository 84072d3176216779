// The web page of `rmbg serve` (web/ at the package root): static files read once at start and served at
// `/` with a strict Content-Security-Policy. The page talks to the public API only, like any client.

import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** dist/server/web-page.js and src/server/web-page.ts both sit two folders below the package root. */
const WEB_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');

const FILES = {
  '/': ['index.html', 'text/html; charset=utf-8'],
  '/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  '/app.css': ['app.css', 'text/css; charset=utf-8'],
  '/icon.svg': ['icon.svg', 'image/svg+xml'],
} as const;

/**
 * Only this server's own files and the API; results are shown from blob: URLs. No inline script or style
 * attribute, no framing (clickjacking a page that holds an API key), no form posting elsewhere.
 */
export const WEB_PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export function webPageRoutes() {
  return Object.entries(FILES).map(([url, [file, type]]) => {
    const body = readFileSync(join(WEB_DIR, file));
    return {
      method: 'GET' as const,
      url,
      handler: async (_request: FastifyRequest, reply: FastifyReply) =>
        reply
          .type(type)
          .header('Content-Security-Policy', WEB_PAGE_CSP)
          .header('X-Content-Type-Options', 'nosniff')
          .header('Referrer-Policy', 'no-referrer')
          .header('Cache-Control', 'no-cache')
          .send(body),
    };
  });
}
