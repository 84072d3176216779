// What the client guards against on its side of the wire: an API key sent in clear text to another machine,
// an answer larger than any result, and server text that would drive the terminal (escape sequences).

import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import { RmbgError } from '../api/errors.js';

/**
 * Largest answer read: a 50 MP result as 8-bit RGBA PNG that does not compress at all is 200 MB; anything
 * past this is not an image of ours.
 */
export const MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

/** Origins already warned about (once per process, not once per request or client). */
const warned = new Set<string>();

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/** One warning per origin when the API key would travel over plain http to a host that is not this machine. */
export function warnIfKeyInClearText(
  base: URL,
  warn: (message: string) => void = (message) => process.stderr.write(`${message}\n`),
): void {
  if (base.protocol !== 'http:' || isLoopback(base.hostname) || warned.has(base.origin)) return;
  warned.add(base.origin);
  warn(
    `rmbg: warning: the API key is sent unencrypted over http:// to ${base.host}; anyone on the network path can read it (use https://)`,
  );
}

/** Reads a body, refusing (upstream_error) one that declares or sends more than `maxBytes`. */
export async function readBounded(body: Readable, declared: string | undefined, maxBytes: number): Promise<Buffer> {
  const tooLarge = (what: string) =>
    new RmbgError(
      'upstream_error',
      `the API server's answer ${what}; no answer of the API is larger than ${maxBytes} bytes`,
    );
  // Destroying an undici body emits an abort error; the refusal thrown here is the error that counts.
  const abandon = (): void => {
    body.on('error', () => undefined);
    body.destroy();
  };
  if (declared !== undefined && Number(declared) > maxBytes) {
    abandon();
    throw tooLarge(`declares ${declared} bytes`);
  }
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    received += chunk.length;
    if (received > maxBytes) {
      abandon();
      throw tooLarge(`is larger than ${maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, received);
}

const TERMINAL_CONTROL =
  /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(\u0007|\u001b\\)?|[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** Server text made safe to print: control characters (escape sequences, bells, carriage returns) removed. */
export function printable(text: string): string {
  return text.replace(TERMINAL_CONTROL, '').replace(/\s*\n\s*/g, ' ');
}
