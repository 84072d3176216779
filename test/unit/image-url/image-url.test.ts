// fetchImageUrl against a real HTTPS server on 127.0.0.1:443 with a throwaway CA. Every port-443 test
// lives in this one file (vitest runs files in parallel processes). Non-loopback addresses appear only
// as refused inputs, and a loopback-only guard makes any connection to them fail before a packet leaves.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import sharp from 'sharp';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RmbgError, type ErrorCode } from '../../../src/api/errors.js';
import { fetchImageUrl, type FetchImageUrlOptions } from '../../../src/image-url/image-url.js';
import { REFUSED_ADDRESS_MESSAGE } from '../../../src/image-url/address-policy.js';
import { startHttpsServer, type TestHttpsServer } from '../../helpers/https-server.js';
import { installLoopbackOnlyNetwork } from '../../helpers/loopback-only-network.js';
import { createTestCa, type TestCa } from '../../helpers/test-ca.js';

const KiB = 1024;
const MiB = 1024 * KiB;

let ca: TestCa;
let server: TestHttpsServer;
let removeGuard: () => void;
let png: Buffer;

interface Seen {
  path: string;
  host: string | undefined;
  servername: string | false | null;
}
let seen: Seen[] = [];
/** What the chunked-flood route managed to send before the client hung up. */
let flood = { written: 0, closedEarly: false };

const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  '/image.png': (_req, res) => {
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
    res.end(png);
  },
  '/redirect': (_req, res) => {
    res.writeHead(302, { location: '/image.png' });
    res.end();
  },
  '/missing': (_req, res) => {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('no such image');
  },
  '/declares-1-GiB': (_req, res) => {
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': 1024 * MiB });
    res.write(png.subarray(0, 100)); // then stalls: only the header can have refused it in time
  },
  '/exactly-1-MiB': (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' }); // chunked, no Content-Length
    for (let i = 0; i < 16; i += 1) res.write(Buffer.alloc(64 * KiB, i));
    res.end();
  },
  '/chunked-flood': (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(64 * KiB, 7);
    const total = 64 * MiB;
    res.on('close', () => {
      flood.closedEarly = flood.written < total;
    });
    const pump = (): void => {
      while (flood.written < total && !res.destroyed) {
        flood.written += chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      if (!res.destroyed) res.end();
    };
    pump();
  },
  '/stall-headers': () => {
    // never answers
  },
  '/stall-body': (_req, res) => {
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
    res.write(png.subarray(0, 10));
  },
  '/truncated': (req, res) => {
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
    res.write(png.subarray(0, 10), () => req.socket.destroy());
  },
};

beforeAll(async () => {
  removeGuard = installLoopbackOnlyNetwork();
  ca = createTestCa(['localhost', '127.0.0.1', 'images.rmbg.test']);
  png = await sharp({ create: { width: 40, height: 30, channels: 4, background: { r: 200, g: 30, b: 60, alpha: 1 } } })
    .png()
    .toBuffer();
  server = await startHttpsServer({
    key: ca.key,
    cert: ca.cert,
    host: '127.0.0.1',
    port: 443,
    retryForMs: 90_000,
    handler: (req, res) => {
      const path = new URL(req.url ?? '/', 'https://x').pathname;
      seen.push({ path, host: req.headers.host, servername: (req.socket as TLSSocket).servername });
      const route = routes[path];
      if (route) route(req, res);
      else res.writeHead(500).end();
    },
  });
}, 120_000);

afterAll(async () => {
  await server?.close();
  ca?.cleanup();
  removeGuard?.();
});

beforeEach(() => {
  seen = [];
});

/** A lookup seam that records each call and answers from a script (the last answer repeats). */
function scriptedLookup(...answers: string[][]): FetchImageUrlOptions['lookup'] & { calls: string[] } {
  const calls: string[] = [];
  const lookup = async (hostname: string): Promise<Array<{ address: string; family: 4 | 6 }>> => {
    calls.push(hostname);
    const answer = answers[Math.min(calls.length, answers.length) - 1] ?? [];
    return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(lookup, { calls });
}

function local(overrides: Partial<FetchImageUrlOptions> = {}): FetchImageUrlOptions {
  return { allowPrivate: true, timeoutMs: 10_000, maxBytes: 22 * MiB, ca: ca.caCert, ...overrides };
}

async function refusal(promise: Promise<unknown>, code: ErrorCode): Promise<RmbgError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(RmbgError);
  const rmbg = error as RmbgError;
  expect({ code: rmbg.code, status: rmbg.status }).toEqual({ code, status: 400 });
  return rmbg;
}

describe('fetchImageUrl: success', () => {
  it('returns the exact image bytes from a literal loopback address when private URLs are allowed', async () => {
    const bytes = await fetchImageUrl(`${server.origin}/image.png`, local());
    expect(bytes.equals(png)).toBe(true);
    expect(await sharp(bytes).metadata()).toMatchObject({ format: 'png', width: 40, height: 30 });
  });

  it('resolves the real name localhost and fetches over TLS verified for localhost', async () => {
    const bytes = await fetchImageUrl('https://localhost/image.png', local());
    expect(bytes.equals(png)).toBe(true);
    expect(seen).toEqual([{ path: '/image.png', host: 'localhost', servername: 'localhost' }]);
  });

  it('uses the hostname for Host, SNI and certificate checks while connecting to the looked-up address', async () => {
    const lookup = scriptedLookup(['127.0.0.1']);
    const bytes = await fetchImageUrl('https://images.rmbg.test/image.png?v=1', local({ lookup }));
    expect(bytes.equals(png)).toBe(true);
    expect(lookup.calls).toEqual(['images.rmbg.test']);
    expect(seen).toEqual([{ path: '/image.png', host: 'images.rmbg.test', servername: 'images.rmbg.test' }]);
  });

  it('accepts an explicit :443', async () => {
    const bytes = await fetchImageUrl('https://127.0.0.1:443/image.png', local());
    expect(bytes.equals(png)).toBe(true);
  });

  it('accepts a body of exactly maxBytes', async () => {
    const bytes = await fetchImageUrl(`${server.origin}/exactly-1-MiB`, local({ maxBytes: MiB }));
    expect(bytes.length).toBe(MiB);
    expect(bytes[MiB - 1]).toBe(15);
  });
});

describe('fetchImageUrl: TLS is verified against the hostname', () => {
  it('refuses a certificate from a CA that is not trusted', async () => {
    const error = await refusal(
      fetchImageUrl(`${server.origin}/image.png`, local({ ca: undefined })),
      'image_url_unreachable',
    );
    expect(error.message).toMatch(/certificate/i);
    expect(seen).toEqual([]);
  });

  it('refuses a certificate that does not name the host, even though it names the connected IP', async () => {
    const lookup = scriptedLookup(['127.0.0.1']);
    const error = await refusal(
      fetchImageUrl('https://other.rmbg.test/image.png', local({ lookup })),
      'image_url_unreachable',
    );
    expect(error.message).toMatch(/other\.rmbg\.test/);
    expect(error.message).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID/);
    expect(seen).toEqual([]);
  });
});

describe('fetchImageUrl: URL shape (applies with allowPrivate too)', () => {
  it.each([
    ['http://127.0.0.1/image.png', /scheme http is not allowed; only https:\/\/ URLs on port 443/],
    ['ftp://127.0.0.1/image.png', /scheme ftp is not allowed/],
    ['https://127.0.0.1:8443/image.png', /port 8443 is not allowed; only port 443/],
    ['https://localhost:80/image.png', /port 80 is not allowed/],
    ['https://user:secret@127.0.0.1/image.png', /must not carry credentials/],
    ['https://user@127.0.0.1/image.png', /must not carry credentials/],
    ['not a url', /not a valid absolute URL/],
    ['/image.png', /not a valid absolute URL/],
  ])('%s is refused', async (url, message) => {
    const lookup = scriptedLookup(['127.0.0.1']);
    const error = await refusal(fetchImageUrl(url, local({ lookup })), 'invalid_image_url');
    expect(error.message).toMatch(message);
    expect(lookup.calls).toEqual([]);
    expect(seen).toEqual([]);
  });
});

describe('fetchImageUrl: private networks are refused by default', () => {
  it.each([
    ['https://127.0.0.1/image.png', 'image_url address 127.0.0.1 is not public: loopback address (127.0.0.0/8)'],
    ['https://10.0.0.1/image.png', 'image_url address 10.0.0.1 is not public: private address (10.0.0.0/8)'],
    ['https://169.254.169.254/latest/meta-data/', 'cloud metadata endpoint (169.254.169.254)'],
    ['https://[::1]/image.png', 'image_url address ::1 is not public: loopback address (::1)'],
    ['https://[::ffff:127.0.0.1]/image.png', 'IPv4-mapped form of 127.0.0.1, a loopback address'],
    ['https://[fd00:ec2::254]/', 'cloud metadata endpoint (fd00:ec2::254)'],
    ['https://[64:ff9b::a9fe:a9fe]/', 'NAT64 form of 169.254.169.254'],
    ['https://2130706433/image.png', 'image_url address 127.0.0.1 is not public'], // decimal
    ['https://0x7f000001/image.png', 'image_url address 127.0.0.1 is not public'], // hex
    ['https://0177.0.0.1/image.png', 'image_url address 127.0.0.1 is not public'], // octal
    ['https://127.1/image.png', 'image_url address 127.0.0.1 is not public'], // short form
  ])('%s is refused without a lookup or a connection', async (url, message) => {
    const lookup = scriptedLookup(['127.0.0.1']);
    const error = await refusal(fetchImageUrl(url, local({ allowPrivate: false, lookup })), 'invalid_image_url');
    expect(error.message).toBe(REFUSED_ADDRESS_MESSAGE);
    expect((error.cause as Error).message).toContain(message);
    expect(lookup.calls).toEqual([]);
    expect(seen).toEqual([]);
  });

  it('refuses a name that the lookup resolves to 127.0.0.1', async () => {
    const lookup = scriptedLookup(['127.0.0.1']);
    const error = await refusal(
      fetchImageUrl('https://images.rmbg.test/image.png', local({ allowPrivate: false, lookup })),
      'invalid_image_url',
    );
    expect(error.message).toBe(REFUSED_ADDRESS_MESSAGE);
    expect((error.cause as Error).message).toContain(
      'image_url host images.rmbg.test resolves to 127.0.0.1, which is not public: loopback',
    );
    expect(lookup.calls).toEqual(['images.rmbg.test']);
    expect(seen).toEqual([]);
  });

  it('refuses a name when any one of its addresses is private', async () => {
    const lookup = scriptedLookup(['::1', '127.0.0.1']);
    const error = await refusal(
      fetchImageUrl('https://images.rmbg.test/image.png', local({ allowPrivate: false, lookup })),
      'invalid_image_url',
    );
    expect((error.cause as Error).message).toContain('resolves to ::1');
    expect(seen).toEqual([]);
  });

  it('refuses the real name localhost through the system resolver', async () => {
    const error = await refusal(
      fetchImageUrl('https://localhost/image.png', local({ allowPrivate: false })),
      'invalid_image_url',
    );
    expect((error.cause as Error).message).toMatch(
      /^image_url host localhost resolves to (127\.0\.0\.1|::1), which is not public: loopback/,
    );
    expect(seen).toEqual([]);
  });

  it('answers a name that does not resolve exactly as a name that resolves to a private address', async () => {
    // Different answers would tell the caller which names exist inside the server's network.
    const missing = async (): Promise<never> => {
      throw Object.assign(new Error('queryA ENOTFOUND nowhere.rmbg.test'), { code: 'ENOTFOUND' });
    };
    const answer = async (host: string, lookup: FetchImageUrlOptions['lookup']) => {
      const error = await fetchImageUrl(`https://${host}/image.png`, local({ allowPrivate: false, lookup })).then(
        () => undefined,
        (e: unknown) => e as RmbgError,
      );
      return { code: error?.code, message: error?.message };
    };
    const unresolved = await answer('nowhere.rmbg.test', missing);
    expect(unresolved).toEqual(await answer('intranet.rmbg.test', scriptedLookup(['10.0.0.5'])));
    expect(unresolved).toEqual(await answer('empty.rmbg.test', async () => []));
    expect(unresolved).toEqual({ code: 'invalid_image_url', message: REFUSED_ADDRESS_MESSAGE });
    expect(seen).toEqual([]);
  });

  it('still says a name could not be resolved with allowPrivate (the operator allowed its own network)', async () => {
    const lookup = async (): Promise<never> => {
      throw Object.assign(new Error('queryA ENOTFOUND nowhere.rmbg.test'), { code: 'ENOTFOUND' });
    };
    const error = await refusal(
      fetchImageUrl('https://nowhere.rmbg.test/image.png', local({ allowPrivate: true, lookup })),
      'image_url_unreachable',
    );
    expect(error.message).toBe('image_url host nowhere.rmbg.test could not be resolved (ENOTFOUND)');
  });
});

describe('fetchImageUrl: DNS rebinding', () => {
  it('looks the host up once and connects to the address it checked, not a later answer', async () => {
    // A second lookup would answer 127.0.0.2, where nothing listens: only the pinned 127.0.0.1 serves the image.
    const lookup = scriptedLookup(['127.0.0.1'], ['127.0.0.2']);
    const bytes = await fetchImageUrl('https://images.rmbg.test/image.png', local({ lookup }));
    expect(bytes.equals(png)).toBe(true);
    expect(lookup.calls).toEqual(['images.rmbg.test']);
    expect(seen).toEqual([{ path: '/image.png', host: 'images.rmbg.test', servername: 'images.rmbg.test' }]);
  });

  it('may fall back between the checked addresses, but to no other', async () => {
    // Nothing listens on [::1]:443 (the server is on 127.0.0.1): the connect falls back to the next checked address.
    const lookup = scriptedLookup(['::1', '127.0.0.1'], ['127.0.0.2']);
    const bytes = await fetchImageUrl('https://images.rmbg.test/image.png', local({ lookup }));
    expect(bytes.equals(png)).toBe(true);
    expect(lookup.calls).toEqual(['images.rmbg.test']);
  });

  it('refuses on the first (checked) answer even if a later lookup would say otherwise', async () => {
    const lookup = scriptedLookup(['127.0.0.1'], ['203.0.113.10']);
    await refusal(
      fetchImageUrl('https://images.rmbg.test/image.png', local({ allowPrivate: false, lookup })),
      'invalid_image_url',
    );
    expect(lookup.calls).toEqual(['images.rmbg.test']);
    expect(seen).toEqual([]);
  });
});

describe('fetchImageUrl: answers that are not the image', () => {
  it('does not follow a redirect, even with allowPrivate', async () => {
    const error = await refusal(fetchImageUrl(`${server.origin}/redirect`, local()), 'invalid_image_url');
    expect(error.message).toBe(
      'image_url on 127.0.0.1 answered 302 (redirect); redirects are not followed; give the direct URL of the image',
    );
    expect(seen.map((s) => s.path)).toEqual(['/redirect']);
  });

  it('reports a 404 as unreachable, with the status', async () => {
    const error = await refusal(fetchImageUrl(`${server.origin}/missing`, local()), 'image_url_unreachable');
    expect(error.message).toBe(
      'image_url on 127.0.0.1 answered HTTP 404; only a 2xx answer carrying the image is accepted',
    );
  });

  it('reports a connection cut before the whole body as unreachable', async () => {
    const error = await refusal(fetchImageUrl(`${server.origin}/truncated`, local()), 'image_url_unreachable');
    expect(error.message).toContain('image_url on 127.0.0.1');
  });
});

describe('fetchImageUrl: size limit', () => {
  it('refuses a Content-Length above the limit from the header alone', async () => {
    const started = Date.now();
    const error = await refusal(
      fetchImageUrl(`${server.origin}/declares-1-GiB`, local({ timeoutMs: 20_000 })),
      'file_too_large',
    );
    expect(error.message).toBe(
      'image_url on 127.0.0.1 declares 1073741824 bytes (Content-Length); image data may be at most 22 MiB',
    );
    expect(Date.now() - started).toBeLessThan(10_000); // the body never arrives: waiting for it would hit the timeout
  });

  it('stops reading a chunked body at the limit and hangs up', async () => {
    flood = { written: 0, closedEarly: false };
    const error = await refusal(
      fetchImageUrl(`${server.origin}/chunked-flood`, local({ maxBytes: MiB })),
      'file_too_large',
    );
    expect(error.message).toBe(`image_url on 127.0.0.1 sent more than ${MiB} bytes; image data may be at most 1 MiB`);
    await expect.poll(() => flood.closedEarly, { timeout: 10_000 }).toBe(true);
    expect(flood.written).toBeLessThan(64 * MiB);
  });
});

describe('fetchImageUrl: time limit and cancellation', () => {
  it('gives up on a server that never answers', async () => {
    const started = Date.now();
    const error = await refusal(
      fetchImageUrl(`${server.origin}/stall-headers`, local({ timeoutMs: 400 })),
      'image_url_unreachable',
    );
    expect(error.message).toBe(
      'image_url on 127.0.0.1 did not deliver the image within 0.4 s; give a URL that answers promptly',
    );
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('gives up on a body that stalls halfway: the deadline covers the body too', async () => {
    const error = await refusal(
      fetchImageUrl(`${server.origin}/stall-body`, local({ timeoutMs: 400 })),
      'image_url_unreachable',
    );
    expect(error.message).toContain('did not deliver the image within 0.4 s');
  });

  it('stops when the caller aborts, with the caller reason', async () => {
    const controller = new AbortController();
    const reason = new Error('client went away');
    setTimeout(() => controller.abort(reason), 200);
    await expect(fetchImageUrl(`${server.origin}/stall-headers`, local({ signal: controller.signal }))).rejects.toBe(
      reason,
    );
  });
});
