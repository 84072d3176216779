// Types of chromium.mjs for the tests that launch it.
import type { Browser } from 'playwright-core';
export function launchChromium(): Promise<Browser>;
