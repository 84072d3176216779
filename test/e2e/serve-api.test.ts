// `rmbg serve` end to end: the real CLI, the real model and a real SQLite data dir, hit over HTTP on
// 127.0.0.1. Keys come from `rmbg keys create --json`; balances are read back through GET /v1.0/account.

import { readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UNSUPPORTED_FIELDS } from '../../src/api/options.js';
import {
  balance,
  call,
  createKey,
  ensureBuilt,
  errorCode,
  rmbg,
  SAMPLES,
  startServe,
  tempDataDir,
  type HttpAnswer,
  type ServeProcess,
} from './serve-harness.js';

const BODY_TIMEOUT_S = 3;

const photo = readFileSync(join(SAMPLES, 'rocket.jpg'));
let server: ServeProcess;
let dataDir: string;

beforeAll(async () => {
  await ensureBuilt();
  dataDir = tempDataDir();
  // --body-timeout 3: short enough for the 408 test, long enough that a real upload to a server busy with
  // the model on a loaded 2-core machine is not cut off (1 s was, once).
  server = await startServe(dataDir, ['--rate-limit', '30', '--body-timeout', String(BODY_TIMEOUT_S)]);
});

afterAll(async () => {
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

function multipart(fields: Record<string, string> = {}, file: Buffer | null = photo): FormData {
  const form = new FormData();
  if (file) form.append('image_file', new Blob([new Uint8Array(file)], { type: 'image/jpeg' }), 'rocket.jpg');
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  return form;
}

function removebg(
  key: string | undefined,
  body: FormData | string,
  headers: Record<string, string> = {},
): Promise<HttpAnswer> {
  return call(`${server.url}/v1.0/removebg`, {
    method: 'POST',
    body,
    headers: { ...(key ? { 'X-API-Key': key } : {}), ...headers },
  });
}

function detail(answer: HttpAnswer): string {
  return (JSON.parse(answer.body.toString()) as { errors: Array<{ detail: string }> }).errors[0]!.detail;
}

describe('startup', () => {
  it('tells how to create a key when the data dir has none', () => {
    expect(server.stderr()).toContain('rmbg keys create');
  });
});

describe('processing', () => {
  it('removes the background of an uploaded file: PNG with alpha, every header, one credit', async () => {
    const { key } = await createKey(dataDir, 10);
    const answer = await removebg(key, multipart({ size: 'preview' }));
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('image/png');
    const meta = await sharp(answer.body).metadata();
    expect(meta.format).toBe('png');
    expect(meta.hasAlpha).toBe(true);
    expect(String(meta.width)).toBe(answer.headers.get('x-width'));
    expect(String(meta.height)).toBe(answer.headers.get('x-height'));
    expect((meta.width ?? 0) * (meta.height ?? 0)).toBeLessThanOrEqual(250_000);
    expect(answer.headers.get('x-credits-charged')).toBe('1');
    expect(answer.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    for (const name of [
      'x-foreground-top',
      'x-foreground-left',
      'x-foreground-width',
      'x-foreground-height',
      'x-ratelimit-limit',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
    ]) {
      expect(answer.headers.get(name), name).toMatch(/^\d+$/);
    }
    expect(
      Number(answer.headers.get('x-foreground-left')) + Number(answer.headers.get('x-foreground-width')),
    ).toBeLessThanOrEqual(640);
    expect(
      Number(answer.headers.get('x-foreground-top')) + Number(answer.headers.get('x-foreground-height')),
    ).toBeLessThanOrEqual(427);
    expect(answer.headers.get('x-ratelimit-limit')).toBe('30');
    expect(answer.headers.get('x-idempotent-replayed')).toBeNull();
    // The rocket's sky is background: a corner of the cut-out is transparent.
    const { data, info } = await sharp(answer.body).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    expect(data[info.channels - 1]).toBeLessThan(32);
    expect(await balance(server.url, key)).toEqual({ total: 9, subscription: 0, payg: 9 });
  });

  it('takes image_file_b64 in multipart and honours format=jpg (opaque, flattened)', async () => {
    const { key } = await createKey(dataDir, 2);
    const answer = await removebg(
      key,
      multipart({ image_file_b64: photo.toString('base64'), format: 'jpg', size: 'small' }, null),
    );
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('image/jpeg');
    expect((await sharp(answer.body).metadata()).format).toBe('jpeg');
  });

  it('answers JSON with exactly the spec fields for Accept: application/json (JSON body, base64 source)', async () => {
    const { key } = await createKey(dataDir, 2);
    const answer = await removebg(
      key,
      JSON.stringify({ image_file_b64: photo.toString('base64'), format: 'webp', crop: true }),
      {
        'Content-Type': 'application/json',
        Accept: 'application/json',
      },
    );
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    const json = JSON.parse(answer.body.toString()) as { data: Record<string, number | string> };
    expect(Object.keys(json)).toEqual(['data']);
    expect(Object.keys(json.data).sort()).toEqual(
      [
        'credits_charged',
        'foreground_height',
        'foreground_left',
        'foreground_top',
        'foreground_width',
        'result_b64',
        'result_height',
        'result_width',
      ].sort(),
    );
    const result = Buffer.from(json.data.result_b64 as string, 'base64');
    const meta = await sharp(result).metadata();
    expect(meta.format).toBe('webp');
    expect(meta.width).toBe(json.data.result_width);
    expect(meta.height).toBe(json.data.result_height);
    expect(json.data.credits_charged).toBe(1);
    expect(String(json.data.result_width)).toBe(answer.headers.get('x-width'));
    for (const name of ['foreground_top', 'foreground_left', 'foreground_width', 'foreground_height'])
      expect(Number.isInteger(json.data[name])).toBe(true);
  });

  it('takes application/x-www-form-urlencoded bodies', async () => {
    const { key } = await createKey(dataDir, 2);
    const body = new URLSearchParams({
      image_file_b64: photo.toString('base64'),
      size: 'preview',
      bg_color: '81d4fa',
    }).toString();
    const answer = await removebg(key, body, { 'Content-Type': 'application/x-www-form-urlencoded' });
    expect(answer.status).toBe(200);
    // bg_color makes the result opaque, so format=auto gives JPG.
    expect(answer.headers.get('content-type')).toBe('image/jpeg');
  });
});

describe('idempotency', () => {
  it('answers 409 while the first request runs, then replays it byte for byte without a new charge', async () => {
    const { key } = await createKey(dataDir, 5);
    const headers = { 'Idempotency-Key': 'shoot-42/rocket' };
    const first = removebg(key, multipart(), headers);
    // The charge is taken after the key is recorded and before the model runs (~1 s or more): once the balance
    // shows it, the first request is certainly in progress, however slow the machine.
    // Polls count against this key's --rate-limit 30: at most 20 of them, 50 → 400 ms apart.
    for (
      let poll = 0, wait = 50;
      (await balance(server.url, key)).total !== 4;
      poll++, wait = Math.min(400, wait * 2)
    ) {
      if (poll === 20) throw new Error('the first request was not charged within 20 polls');
      await new Promise((done) => setTimeout(done, wait));
    }
    const during = await removebg(key, multipart(), headers);
    expect(during.status).toBe(409);
    expect(errorCode(during)).toBe('idempotency_in_progress');
    const original = await first;
    expect(original.status).toBe(200);
    expect(await balance(server.url, key)).toMatchObject({ total: 4 });

    const replay = await removebg(key, multipart(), headers);
    expect(replay.status).toBe(200);
    expect(replay.body.equals(original.body)).toBe(true);
    expect(replay.headers.get('x-idempotent-replayed')).toBe('true');
    expect(replay.headers.get('x-credits-charged')).toBe('1');
    expect(replay.headers.get('x-request-id')).toBe(original.headers.get('x-request-id'));
    expect(replay.headers.get('x-width')).toBe(original.headers.get('x-width'));
    expect(await balance(server.url, key)).toMatchObject({ total: 4 });

    const otherOptions = await removebg(key, multipart({ size: 'medium' }), headers);
    expect([otherOptions.status, errorCode(otherOptions)]).toEqual([409, 'idempotency_key_mismatch']);
  });
});

describe('credits and keys', () => {
  it('answers 402 with no charge, and serves again after `rmbg credits add`', async () => {
    const { key } = await createKey(dataDir, 0);
    const refused = await removebg(key, multipart());
    expect(refused.status).toBe(402);
    expect(errorCode(refused)).toBe('insufficient_credits');
    expect(refused.headers.get('x-ratelimit-limit')).toBe('30');
    expect(await balance(server.url, key)).toEqual({ total: 0, subscription: 0, payg: 0 });

    const added = await rmbg(['credits', 'add', '2', '--key', key, '--subscription', '--data-dir', dataDir]);
    expect(added.exitCode).toBe(0);
    expect(await balance(server.url, key)).toEqual({ total: 2, subscription: 2, payg: 0 });
    expect((await removebg(key, multipart())).status).toBe(200);
    expect(await balance(server.url, key)).toEqual({ total: 1, subscription: 1, payg: 0 });
  });

  it('answers 403 for a missing, unknown, revoked or free-plan key', async () => {
    const missing = await removebg(undefined, multipart());
    expect([missing.status, errorCode(missing)]).toEqual([403, 'missing_api_key']);
    const unknown = await removebg('rmbg_this-is-not-a-key', multipart());
    expect([unknown.status, errorCode(unknown)]).toEqual([403, 'invalid_api_key']);
    const free = await createKey(dataDir, 5, 'free');
    const freeAnswer = await removebg(free.key, multipart());
    expect([freeAnswer.status, errorCode(freeAnswer)]).toEqual([403, 'plan_without_api_access']);

    const revoked = await createKey(dataDir, 5);
    const listed = JSON.parse((await rmbg(['keys', 'list', '--json', '--data-dir', dataDir])).stdout) as Array<{
      id: string;
      prefix: string;
      revoked: string | null;
    }>;
    expect(JSON.stringify(listed)).not.toContain(revoked.key);
    const entry = listed.find((k) => revoked.key.startsWith(k.prefix) && k.revoked === null);
    expect((await rmbg(['keys', 'revoke', entry!.id, '--data-dir', dataDir])).exitCode).toBe(0);
    const after = await call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': revoked.key } });
    expect([after.status, errorCode(after)]).toEqual([403, 'invalid_api_key']);
  });

  it('answers 429 with Retry-After once a key exceeds --rate-limit', async () => {
    const { key } = await createKey(dataDir, 0);
    for (let i = 0; i < 30; i += 1)
      expect((await call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': key } })).status).toBe(200);
    const limited = await call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': key } });
    expect(limited.status).toBe(429);
    expect(errorCode(limited)).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
  });
});

describe('invalid requests', () => {
  let key: string;
  // A key per test: bodies are read after the rate limit, so every refused body counts against --rate-limit 30.
  beforeEach(async () => {
    key = (await createKey(dataDir, 3)).key;
  });

  it('rejects every unsupported parameter with 400 unsupported_parameter naming it, charging nothing', async () => {
    const cases: Array<[string, string]> = [
      ...UNSUPPORTED_FIELDS.map((name): [string, string] => [name, '1']),
      ['type', 'person'],
      ['type_level', '2'],
      ['channels', 'alpha'],
    ];
    for (const [name, value] of cases) {
      const answer = await removebg(key, multipart({ [name]: value }));
      expect(answer.status, name).toBe(400);
      expect(errorCode(answer), name).toBe('unsupported_parameter');
      expect(detail(answer)).toContain(name);
    }
    // Empty values of unsupported parameters mean "not set": this body fails for its missing source instead.
    expect(errorCode(await removebg(key, multipart({ shadow: '', roi: '' }, null)))).toBe('missing_image_source');
    expect(await balance(server.url, key)).toMatchObject({ total: 3 });
  });

  it('answers 400 with a specific code for each malformed body', async () => {
    const duplicated = multipart({ size: 'hd' });
    duplicated.append('size', 'small');
    const expectations: Array<[Promise<HttpAnswer>, string]> = [
      [removebg(key, multipart({}, null)), 'missing_image_source'],
      [removebg(key, multipart({ image_url: 'https://example.com/x.jpg' })), 'multiple_image_sources'],
      [removebg(key, multipart({ resolution: 'hd' })), 'unknown_field'],
      [removebg(key, multipart({ size: 'huge' })), 'invalid_option'],
      [removebg(key, duplicated), 'invalid_request'],
      [
        removebg(key, JSON.stringify({ image_file_b64: `data:image/jpeg;base64,${photo.toString('base64')}` }), {
          'Content-Type': 'application/json',
        }),
        'invalid_base64',
      ],
      [
        removebg(key, JSON.stringify({ image_file: photo.toString('base64') }), { 'Content-Type': 'application/json' }),
        'invalid_request',
      ],
      [removebg(key, '{"image_url": ', { 'Content-Type': 'application/json' }), 'invalid_request'],
      [
        removebg(key, 'image_url=http%3A%2F%2Fexample.com%2Fx.jpg', {
          'Content-Type': 'application/x-www-form-urlencoded',
        }),
        'invalid_image_url',
      ],
    ];
    for (const [pending, code] of expectations) {
      const answer = await pending;
      expect([answer.status, errorCode(answer)]).toEqual([400, code]);
      expect(answer.headers.get('x-request-id')).toBeTruthy();
    }
    expect(await balance(server.url, key)).toMatchObject({ total: 3 });
  });

  it('answers 400 for images the engine refuses (corrupt, too small), refunding the charge', async () => {
    const corrupt = await removebg(key, multipart({}, photo.subarray(0, 2000)));
    expect([corrupt.status, errorCode(corrupt)]).toEqual([400, 'corrupt_image']);
    const tiny = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#888' } })
      .png()
      .toBuffer();
    const small = await removebg(key, multipart({}, tiny));
    expect([small.status, errorCode(small)]).toEqual([400, 'image_dimensions_out_of_range']);
    expect(await balance(server.url, key)).toMatchObject({ total: 3 });
  });

  it('answers 400 file_too_large for a 23 MiB upload and keeps serving', async () => {
    const answer = await removebg(key, multipart({}, Buffer.alloc(23 * 1024 * 1024, 0xff)));
    expect([answer.status, errorCode(answer)]).toEqual([400, 'file_too_large']);
    expect((await call(`${server.url}/v1.0/account`, { headers: { 'X-API-Key': key } })).status).toBe(200);
  });

  it('answers 415 for other content types', async () => {
    const answer = await removebg(key, 'hello', { 'Content-Type': 'text/plain' });
    expect([answer.status, errorCode(answer)]).toEqual([415, 'unsupported_content_type']);
  });

  it('answers 408 when the body stalls past --body-timeout (raw socket)', async () => {
    const url = new URL(server.url);
    const started = Date.now();
    const answer = await new Promise<string>((done, fail) => {
      const socket = connect(Number(url.port), url.hostname, () =>
        socket.write(
          `POST /v1.0/removebg HTTP/1.1\r\nHost: ${url.host}\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"image_file_b64":"iVBOR`,
        ),
      );
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('close', () => done(text));
      socket.on('error', fail);
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(BODY_TIMEOUT_S * 1000 - 50);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(answer).toMatch(/x-request-id: [0-9a-f-]{36}/i);
    expect(answer).toContain('"code":"request_timeout"');
  });

  it('answers 404 and 405 with the error body', async () => {
    const missing = await call(`${server.url}/v1.0/removebg/extra`);
    expect([missing.status, errorCode(missing)]).toEqual([404, 'not_found']);
    const wrong = await call(`${server.url}/v1.0/removebg`, { method: 'PUT' });
    expect([wrong.status, errorCode(wrong)]).toEqual([405, 'method_not_allowed']);
  });

  it('serves the OpenAPI document', async () => {
    const answer = await call(`${server.url}/v1.0/openapi.json`);
    expect(answer.status).toBe(200);
    const doc = JSON.parse(answer.body.toString()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1.0/removebg', '/v1.0/account']));
  });
});
