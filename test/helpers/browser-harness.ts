// Debian's chromium driven by playwright-core (scripts/lib/chromium.mjs launches it, for the README's screenshot too).
// One browser per test file; each test takes a fresh context (its own sessionStorage) from it.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../../scripts/lib/chromium.mjs';
import { ROOT } from './serve-harness.js';

/** Screenshots of the page, for a person to look at; git-ignored. */
export const SCREENSHOTS = join(ROOT, 'test', 'screenshots');

export async function launchBrowser(): Promise<Browser> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return launchChromium();
}
