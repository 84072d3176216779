// rmbg's own package.json, read beside the running code (dist/ in a clone and in the installed tarball, which
// always holds package.json), so the version is written in package.json only.

import { createRequire } from 'node:module';

/** rmbg's version, as its package.json states it. */
export function rmbgVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('../../package.json') as { version: string }).version;
}
