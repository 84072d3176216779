// Request parsing of POST /v1.0/removebg bodies: all three encodings, every source rule, the closed schema,
// strict base64 and the 22 MiB ceiling (enforced without reading the rest of an oversized body).

import { readFile } from 'node:fs/promises';
import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { RmbgError } from '../../../src/api/errors.js';
import { LIMITS } from '../../../src/api/limits.js';
import { UNSUPPORTED_FIELDS } from '../../../src/api/options.js';
import { parseRemoveRequest, type IncomingBody } from '../../../src/api/request-parsing.js';
import { MAX_BODY_BYTES } from '../../../src/api/request-limits.js';

const image = await readFile(new URL('../../../samples/rocket.jpg', import.meta.url));
const imageB64 = image.toString('base64');
const MiB = 1024 * 1024;

/** A real multipart body, encoded by the platform's own FormData serialiser. */
async function multipart(build: (form: FormData) => void): Promise<IncomingBody> {
  const form = new FormData();
  build(form);
  const request = new Request('http://127.0.0.1/', { method: 'POST', body: form });
  const body = Buffer.from(await request.arrayBuffer());
  return {
    contentType: request.headers.get('content-type') ?? undefined,
    contentLength: body.length,
    body: Readable.from([body]),
  };
}

function json(value: unknown, contentType = 'application/json'): IncomingBody {
  const body = Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));
  return { contentType, contentLength: body.length, body: Readable.from([body]) };
}

function urlencoded(text: string): IncomingBody {
  const body = Buffer.from(text);
  return { contentType: 'application/x-www-form-urlencoded', contentLength: body.length, body: Readable.from([body]) };
}

function imageFile(form: FormData, name = 'image_file', data: Buffer = image) {
  form.append(name, new Blob([new Uint8Array(data)], { type: 'image/jpeg' }), 'rocket.jpg');
}

async function failure(incoming: IncomingBody | Promise<IncomingBody>): Promise<RmbgError> {
  const error = await parseRemoveRequest(await incoming).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(RmbgError);
  return error as RmbgError;
}

/** A body stream of `total` bytes in 1 MiB chunks that records how much of it was pulled. */
function countingBody(total: number, prefix = Buffer.alloc(0)): { body: Readable; pulled: () => number } {
  let pulled = 0;
  const body = Readable.from(
    (function* () {
      yield prefix;
      pulled += prefix.length;
      for (let sent = 0; sent < total; sent += MiB) {
        pulled += MiB;
        yield Buffer.alloc(MiB, 0x41);
      }
    })(),
    { objectMode: false, highWaterMark: MiB },
  );
  return { body, pulled: () => pulled };
}

describe('content types', () => {
  it('refuses other content types with 415 unsupported_content_type', async () => {
    for (const contentType of ['text/plain', 'application/octet-stream', 'image/png', 'application/jsonx', undefined]) {
      const error = await failure({ ...json({ image_url: 'https://example.com/a.png' }), contentType });
      expect(error.code).toBe('unsupported_content_type');
      expect(error.status).toBe(415);
    }
  });

  it('accepts media types case-insensitively and with parameters', async () => {
    const parsed = await parseRemoveRequest(
      json({ image_url: 'https://example.com/a.png' }, 'Application/JSON; charset=utf-8'),
    );
    expect(parsed.source).toEqual({ kind: 'url', url: 'https://example.com/a.png' });
  });
});

describe('multipart/form-data', () => {
  it('reads image_file byte for byte and the option fields', async () => {
    const parsed = await parseRemoveRequest(
      await multipart((form) => {
        imageFile(form);
        form.append('size', 'small');
        form.append('format', 'webp');
        form.append('crop', 'true');
        form.append('bg_color', '81d4fa');
        form.append('type', 'auto');
        form.append('type_level', 'none');
        form.append('channels', 'rgba');
      }),
    );
    expect(parsed.source.kind).toBe('file');
    expect(parsed.source.kind === 'file' && parsed.source.data.equals(image)).toBe(true);
    expect(parsed.options).toEqual({
      size: 'small',
      format: 'webp',
      crop: true,
      bgColor: { r: 0x81, g: 0xd4, b: 0xfa, alpha: 1 },
    });
  });

  it('applies the defaults when no option is sent', async () => {
    const parsed = await parseRemoveRequest(await multipart((form) => imageFile(form)));
    expect(parsed.options).toEqual({ size: 'preview', format: 'auto', crop: false, bgColor: undefined });
  });

  it('accepts image_url and image_file_b64 as text parts', async () => {
    const byUrl = await parseRemoveRequest(
      await multipart((form) => form.append('image_url', 'https://example.com/a.jpg')),
    );
    expect(byUrl.source).toEqual({ kind: 'url', url: 'https://example.com/a.jpg' });
    const byB64 = await parseRemoveRequest(await multipart((form) => form.append('image_file_b64', imageB64)));
    expect(byB64.source.kind === 'base64' && byB64.source.data.equals(image)).toBe(true);
  });

  it('needs exactly one source', async () => {
    expect((await failure(multipart((form) => form.append('size', 'small')))).code).toBe('missing_image_source');
    const both = await failure(
      multipart((form) => {
        imageFile(form);
        form.append('image_url', 'https://example.com/a.jpg');
      }),
    );
    expect(both.code).toBe('multiple_image_sources');
    expect(both.message).toContain('image_file and image_url');
    const three = await failure(
      multipart((form) => {
        imageFile(form);
        form.append('image_url', 'https://example.com/a.jpg');
        form.append('image_file_b64', imageB64);
      }),
    );
    expect(three.code).toBe('multiple_image_sources');
  });

  it('treats empty sources as absent, like a browser form with no file chosen', async () => {
    const parsed = await parseRemoveRequest(
      await multipart((form) => {
        form.append('image_file', new Blob([]), '');
        form.append('image_url', '');
        form.append('image_file_b64', imageB64);
      }),
    );
    expect(parsed.source.kind).toBe('base64');
  });

  it('names an unknown field, whether text or file', async () => {
    const text = await failure(
      multipart((form) => {
        imageFile(form);
        form.append('resolution', 'hd');
      }),
    );
    expect(text.code).toBe('unknown_field');
    expect(text.message).toContain("'resolution'");
    const file = await failure(multipart((form) => imageFile(form, 'photo')));
    expect(file.code).toBe('unknown_field');
    expect(file.message).toContain("'photo'");
  });

  it('rejects a background image upload as an unsupported parameter', async () => {
    const error = await failure(
      multipart((form) => {
        imageFile(form);
        imageFile(form, 'bg_image_file');
      }),
    );
    expect(error.code).toBe('unsupported_parameter');
    expect(error.message).toContain('bg_image_file');
  });

  it('rejects a text field sent as a file, and image_file sent as text', async () => {
    const asFile = await failure(multipart((form) => imageFile(form, 'image_url')));
    expect(asFile.code).toBe('invalid_request');
    expect(asFile.message).toContain('image_url must be a text part');
    const asText = await failure(multipart((form) => form.append('image_file', 'not a file')));
    expect(asText.code).toBe('invalid_request');
    expect(asText.message).toContain('file part');
  });

  it('rejects duplicate fields and a second image_file', async () => {
    const field = await failure(
      multipart((form) => {
        imageFile(form);
        form.append('size', 'small');
        form.append('size', 'hd');
      }),
    );
    expect(field.code).toBe('invalid_request');
    expect(field.message).toContain("'size' appears more than once");
    const file = await failure(
      multipart((form) => {
        imageFile(form);
        imageFile(form);
      }),
    );
    expect(file.code).toBe('invalid_request');
    expect(file.message).toContain('image_file');
  });

  it('rejects a multipart body without boundary, and a truncated one', async () => {
    const noBoundary = await failure({
      contentType: 'multipart/form-data',
      contentLength: 4,
      body: Readable.from([Buffer.from('abcd')]),
    });
    expect(noBoundary.code).toBe('invalid_request');
    const whole = await multipart((form) => imageFile(form));
    const cut = (await readAll(whole.body)).subarray(0, 5000);
    const truncated = await failure({ ...whole, contentLength: cut.length, body: Readable.from([cut]) });
    expect(truncated.code).toBe('invalid_request');
  });

  it('stops reading an image_file part past 22 MiB when no Content-Length was sent', async () => {
    const boundary = 'XyZboundary';
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="image_file"; filename="big.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
    );
    const { body, pulled } = countingBody(28 * MiB, head);
    const error = await failure({
      contentType: `multipart/form-data; boundary=${boundary}`,
      contentLength: undefined,
      body,
    });
    expect(error.code).toBe('file_too_large');
    expect(error.status).toBe(400);
    expect(pulled()).toBeLessThan(LIMITS.maxImageBytes + 3 * MiB);
  });

  it('accepts an image_file of exactly 22 MiB', async () => {
    const exact = Buffer.alloc(LIMITS.maxImageBytes, 7);
    const parsed = await parseRemoveRequest(await multipart((form) => imageFile(form, 'image_file', exact)));
    expect(parsed.source.kind === 'file' && parsed.source.data.length).toBe(LIMITS.maxImageBytes);
  });
});

describe('application/json', () => {
  it('reads image_file_b64 and options, crop as a JSON boolean', async () => {
    const parsed = await parseRemoveRequest(
      json({ image_file_b64: imageB64, size: 'medium', crop: true, format: 'png' }),
    );
    expect(parsed.source.kind === 'base64' && parsed.source.data.equals(image)).toBe(true);
    expect(parsed.options).toMatchObject({ size: 'medium', crop: true, format: 'png' });
  });

  it('refuses image_file, with a hint to use image_file_b64', async () => {
    const error = await failure(json({ image_file: imageB64 }));
    expect(error.code).toBe('invalid_request');
    expect(error.message).toContain('image_file_b64');
  });

  it('refuses malformed JSON and non-objects with invalid_request', async () => {
    for (const body of ['{"image_url": ', '', '[1,2]', 'null', '"text"', '42']) {
      const error = await failure(json(body));
      expect(error.code, body).toBe('invalid_request');
    }
  });

  it('refuses duplicate keys, which JSON.parse would silently merge', async () => {
    const error = await failure(json('{"image_url":"https://a.example/x.png","size":"hd","size":"small"}'));
    expect(error.code).toBe('invalid_request');
    expect(error.message).toContain("'size'");
  });

  it('is not confused by keys inside string values or nested objects', async () => {
    const parsed = await parseRemoveRequest(
      json('{"image_url":"https://a.example/\\"size\\",x.png","size":"small","roi":null}'),
    );
    expect(parsed.source).toEqual({ kind: 'url', url: 'https://a.example/"size",x.png' });
    const nested = await failure(json('{"image_url":"https://a.example/x.png","scale":{"size":"small","size":"hd"}}'));
    expect(nested.code).toBe('unsupported_parameter'); // the nested duplicate is not a top-level field
  });

  it('refuses an image_url that can never be fetched while parsing, before any charge', async () => {
    for (const [url, says] of [
      ['http://a.example/x.jpg', 'scheme http'],
      ['https://a.example:8443/x.jpg', 'port 8443'],
      ['https://user:pw@a.example/x.jpg', 'credentials'],
      ['not a url', 'not a valid absolute URL'],
    ]) {
      const error = await failure(json({ image_url: url }));
      expect(error.code).toBe('invalid_image_url');
      expect(error.status).toBe(400);
      expect(error.message).toContain(says);
    }
  });

  it('refuses non-string sources', async () => {
    const error = await failure(json({ image_url: 42 }));
    expect(error.code).toBe('invalid_request');
    expect(error.message).toContain('image_url must be a string');
  });

  it('refuses every unsupported parameter with a non-empty value, naming it, and ignores empty ones', async () => {
    for (const name of UNSUPPORTED_FIELDS) {
      const error = await failure(json({ image_url: 'https://a.example/x.png', [name]: '1' }));
      expect(error.code, name).toBe('unsupported_parameter');
      expect(error.message).toContain(name);
      const parsed = await parseRemoveRequest(json({ image_url: 'https://a.example/x.png', [name]: '' }));
      expect(parsed.source.kind).toBe('url');
    }
    for (const [name, value] of [
      ['type', 'person'],
      ['type_level', '1'],
      ['channels', 'alpha'],
    ]) {
      const error = await failure(json({ image_url: 'https://a.example/x.png', [name as string]: value }));
      expect(error.code, name).toBe('unsupported_parameter');
      expect(error.message).toContain(name);
    }
  });

  it('names an unknown field and refuses invalid option values', async () => {
    const unknown = await failure(json({ image_url: 'https://a.example/x.png', colour: 'red' }));
    expect(unknown.code).toBe('unknown_field');
    expect(unknown.message).toContain("'colour'");
    const size = await failure(json({ image_url: 'https://a.example/x.png', size: 'huge' }));
    expect(size.code).toBe('invalid_option');
    expect(size.message).toContain('preview');
  });

  it('stops reading a body past its ceiling when no Content-Length was sent', async () => {
    const { body, pulled } = countingBody(60 * MiB, Buffer.from('{"image_file_b64":"'));
    const error = await failure({ contentType: 'application/json', contentLength: undefined, body });
    expect(error.code).toBe('file_too_large');
    expect(pulled()).toBeLessThan(MAX_BODY_BYTES.json + 3 * MiB);
  });

  it('refuses a declared Content-Length over the ceiling without reading the body', async () => {
    let read = false;
    const body = new Readable({
      read() {
        read = true;
        this.push(null);
      },
    });
    const error = await failure({ contentType: 'application/json', contentLength: MAX_BODY_BYTES.json + 1, body });
    expect(error.code).toBe('file_too_large');
    expect(read).toBe(false);
  });
});

describe('image_file_b64', () => {
  const url = (b64: string) => json({ image_file_b64: b64 });

  it('rejects a data-URL prefix', async () => {
    const error = await failure(url(`data:image/jpeg;base64,${imageB64}`));
    expect(error.code).toBe('invalid_base64');
    expect(error.message).toContain('data-URL');
  });

  it('rejects characters outside the standard alphabet, including URL-safe base64 and line breaks', async () => {
    for (const bad of ['ab-d', 'ab_d', 'ab*d', `${imageB64.slice(0, 76)}\n${imageB64.slice(76)}`]) {
      expect((await failure(url(bad))).code).toBe('invalid_base64');
    }
  });

  it('rejects missing or misplaced padding', async () => {
    for (const bad of ['YWI', 'YQ', 'YQ=', 'Y===', 'YQ==YQ==', 'Y=Q=']) {
      expect((await failure(url(bad))).code, bad).toBe('invalid_base64');
    }
    const ok = await parseRemoveRequest(url('YWI='));
    expect(ok.source.kind === 'base64' && ok.source.data.toString()).toBe('ab');
  });

  it('rejects data that decodes to more than 22 MiB, and accepts exactly 22 MiB', async () => {
    const over = Buffer.alloc(LIMITS.maxImageBytes + 1, 1).toString('base64');
    expect((await failure(url(over))).code).toBe('file_too_large');
    const exact = Buffer.alloc(LIMITS.maxImageBytes, 1).toString('base64');
    const parsed = await parseRemoveRequest(url(exact));
    expect(parsed.source.kind === 'base64' && parsed.source.data.length).toBe(LIMITS.maxImageBytes);
  });
});

describe('application/x-www-form-urlencoded', () => {
  it('reads percent-encoded base64 and options', async () => {
    const parsed = await parseRemoveRequest(
      urlencoded(new URLSearchParams({ image_file_b64: imageB64, size: 'hd', crop: '1' }).toString()),
    );
    expect(parsed.source.kind === 'base64' && parsed.source.data.equals(image)).toBe(true);
    expect(parsed.options).toMatchObject({ size: 'hd', crop: true });
  });

  it('explains a + that was not percent-encoded', async () => {
    const error = await failure(urlencoded('image_file_b64=ab+d'));
    expect(error.code).toBe('invalid_base64');
    expect(error.message).toContain('%2B');
  });

  it('refuses image_file, duplicates, unknown and unsupported fields', async () => {
    expect((await failure(urlencoded('image_file=abc'))).code).toBe('invalid_request');
    expect((await failure(urlencoded('image_url=https%3A%2F%2Fa.example%2Fx.png&format=png&format=jpg'))).code).toBe(
      'invalid_request',
    );
    expect((await failure(urlencoded('image_url=https%3A%2F%2Fa.example%2Fx.png&foo=1'))).code).toBe('unknown_field');
    expect((await failure(urlencoded('image_url=https%3A%2F%2Fa.example%2Fx.png&shadow=1'))).code).toBe(
      'unsupported_parameter',
    );
    const parsed = await parseRemoveRequest(
      urlencoded('image_url=https%3A%2F%2Fa.example%2Fx.png&shadow=&crop_margin='),
    );
    expect(parsed.source).toEqual({ kind: 'url', url: 'https://a.example/x.png' });
  });

  it('needs a source', async () => {
    expect((await failure(urlencoded('size=small'))).code).toBe('missing_image_source');
    expect((await failure(urlencoded(''))).code).toBe('missing_image_source');
  });
});

describe('interrupted bodies', () => {
  it('rejects with the signal reason when the body stalls', async () => {
    const stalled = new PassThrough();
    stalled.write('{"image_url":');
    const controller = new AbortController();
    const pending = parseRemoveRequest({
      contentType: 'application/json',
      contentLength: 100,
      body: stalled,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(new RmbgError('request_timeout', 'body not received within 1 s')), 20);
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RmbgError);
    expect((error as RmbgError).code).toBe('request_timeout');
  });

  it('rejects with invalid_request when the stream closes before its end', async () => {
    const cut = new PassThrough();
    cut.write('--b\r\nContent-Disposition: form-data; name="size"\r\n\r\nsmall');
    const pending = parseRemoveRequest({
      contentType: 'multipart/form-data; boundary=b',
      contentLength: 1000,
      body: cut,
    });
    setTimeout(() => cut.destroy(), 20);
    const error = await pending.catch((e: unknown) => e);
    expect((error as RmbgError).code).toBe('invalid_request');
  });
});

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
