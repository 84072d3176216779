// Debian's chromium driven by playwright-core (no browser download: `.ci/run` installs the apt package).
// One browser per test file; each test takes a fresh context (its own sessionStorage) from it.

import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { ROOT } from './serve-harness.js';

export const CHROMIUM = '/usr/bin/chromium';

/** Screenshots of the page, for a person to look at; git-ignored. */
export const SCREENSHOTS = join(ROOT, 'test', 'screenshots');

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  // launch() gives the browser a fresh temporary profile; the flags keep it off the network and quiet.
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
