// The client's own guards, against a real scripted server on 127.0.0.1: a key over plain http to another
// machine is warned about once, an oversized answer is refused, and server text cannot drive the terminal.

import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_OPTIONS } from '../../../src/api/options.js';
import { createApiClient } from '../../../src/client/api-client.js';
import {
  createFaultServer,
  imageResult,
  json,
  makePng,
  TIMEOUT_MS,
  type FaultServer,
} from '../../helpers/fault-server.js';
import { rejectionOf } from '../../helpers/rejection.js';

let server: FaultServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('the API client', () => {
  it('warns once per origin when the key would go over plain http to a host that is not this machine', () => {
    const warnings: string[] = [];
    const warn = (message: string) => void warnings.push(message);
    // Creating a client sends nothing: no network is needed to see the warning.
    createApiClient({ timeoutMs: TIMEOUT_MS, baseUrl: 'http://api.example.test', apiKey: 'k', warn });
    createApiClient({ timeoutMs: TIMEOUT_MS, baseUrl: 'http://api.example.test/v1.0', apiKey: 'k', warn });
    createApiClient({ timeoutMs: TIMEOUT_MS, baseUrl: 'https://api.example.test', apiKey: 'k', warn });
    for (const local of ['http://127.0.0.1:5000', 'http://localhost:5000', 'http://[::1]:5000'])
      createApiClient({ timeoutMs: TIMEOUT_MS, baseUrl: local, apiKey: 'k', warn });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/unencrypted over http:\/\/ to api\.example\.test/);
  });

  it('refuses an answer larger than its cap with upstream_error, and reads one within it', async () => {
    const png = await makePng(40, 40);
    server = await createFaultServer({ script: [imageResult(png, 40, 40), imageResult(png, 40, 40)] });
    const capped = createApiClient({
      timeoutMs: TIMEOUT_MS,
      baseUrl: server.url,
      apiKey: 'k',
      maxResponseBytes: 64,
      retry: { maxAttempts: 1 },
    });
    const refused = await rejectionOf(capped.postRemoveBg(png, DEFAULT_OPTIONS));
    expect([refused.code, refused.message]).toEqual([
      'upstream_error',
      expect.stringContaining(`declares ${png.length} bytes`),
    ]);
    const roomy = createApiClient({
      timeoutMs: TIMEOUT_MS,
      baseUrl: server.url,
      apiKey: 'k',
      maxResponseBytes: png.length,
      retry: { maxAttempts: 1 },
    });
    expect((await roomy.postRemoveBg(png, DEFAULT_OPTIONS)).data).toEqual(png);
  });

  it('strips escape sequences and control characters from the server text it reports', async () => {
    const hostile = 'bad \u001b[2J\u001b[31mred\u001b[0m \u001b]0;owned\u0007bell\u0007 line\r\nnext\u0000';
    server = await createFaultServer({
      script: [json(400, { errors: [{ title: `T\u001b[1m`, code: 'invalid_option', detail: hostile }] })],
    });
    const client = createApiClient({
      timeoutMs: TIMEOUT_MS,
      baseUrl: server.url,
      apiKey: 'k',
      retry: { maxAttempts: 1 },
    });
    const error = await rejectionOf(client.postRemoveBg(Buffer.from('x'), DEFAULT_OPTIONS));
    expect(error.code).toBe('invalid_option');
    expect(error.message).toBe('bad red bell line next');
    // eslint-disable-next-line no-control-regex
    expect(error.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });
});
