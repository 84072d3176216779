// A real HTTP server on 127.0.0.1 whose answers are scripted request by request (errors, Retry-After,
// dropped connections, delays, hangs, success with real PNG bytes), optionally forwarding to a real
// upstream such as `rmbg serve`. Every request is recorded so tests can assert what a client sent and when.

import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import busboy from 'busboy';
import sharp from 'sharp';

/** A client's time limit for a fault server's answers: ample on loopback (a test of the limit sets its own). */
export const TIMEOUT_MS = 30_000;

export interface ReceivedFile {
  filename: string;
  mimeType: string;
  data: Buffer;
}

export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. /api/v1.0/removebg */
  path: string;
  /** Lower-cased names, as Node gives them. */
  headers: IncomingHttpHeaders;
  body: Buffer;
  bodySize: number;
  /** Date.now() when the request line arrived. */
  arrivedAt: number;
  /** Multipart text fields (empty for other bodies). */
  fields: Record<string, string>;
  /** Multipart file parts by field name. */
  files: Record<string, ReceivedFile>;
  /** Proxied: the upstream server's status, set once its whole answer has come (even if the client left meanwhile). */
  upstreamStatus?: number;
}

export type FaultStep =
  | { kind: 'respond'; status: number; headers?: Record<string, string>; body?: Buffer | string; delayMs?: number }
  /** Destroys the socket without an answer (after the body was read: the server may have done the work). */
  | { kind: 'drop'; delayMs?: number }
  /** Never answers; the client has to time out. */
  | { kind: 'hang' }
  /** Forwards the request to the upstream and relays its answer. */
  | { kind: 'proxy'; delayMs?: number }
  | ((request: RecordedRequest) => FaultStep | Promise<FaultStep>);

export interface FaultServerOptions {
  /** Base URL of a real server to forward to (proxy steps, and every request once the script is used up). */
  upstream?: string;
  script?: FaultStep[];
  /** Answer once the script is used up; default: proxy when an upstream is set, else a 500 naming the problem. */
  fallback?: FaultStep;
}

export interface FaultServer {
  /** http://127.0.0.1:PORT */
  url: string;
  requests: RecordedRequest[];
  /** Appends steps to the script. */
  enqueue(...steps: FaultStep[]): void;
  close(): Promise<void>;
}

// ---- steps ----

export function respond(
  status: number,
  options: { headers?: Record<string, string>; body?: Buffer | string; delayMs?: number } = {},
): FaultStep {
  return { kind: 'respond', status, ...options };
}

export function json(
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
  delayMs?: number,
): FaultStep {
  return respond(status, {
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(value),
    ...(delayMs ? { delayMs } : {}),
  });
}

/** The spec's error body. */
export function apiError(status: number, code: string, title = code, headers: Record<string, string> = {}): FaultStep {
  return json(status, { errors: [{ title, code }] }, headers);
}

export function drop(delayMs?: number): FaultStep {
  return { kind: 'drop', ...(delayMs ? { delayMs } : {}) };
}

export function hang(): FaultStep {
  return { kind: 'hang' };
}

export function proxy(delayMs?: number): FaultStep {
  return { kind: 'proxy', ...(delayMs ? { delayMs } : {}) };
}

/** A small real PNG (RGBA, a red square on transparency) made with sharp. */
export async function makePng(width = 40, height = 40): Promise<Buffer> {
  const inner = Math.max(1, Math.floor(Math.min(width, height) / 2));
  const square = await sharp({
    create: { width: inner, height: inner, channels: 4, background: { r: 255, g: 0, b: 0, alpha: 1 } },
  })
    .png()
    .toBuffer();
  return sharp({ create: { width, height, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
    .composite([{ input: square, top: Math.floor((height - inner) / 2), left: Math.floor((width - inner) / 2) }])
    .png()
    .toBuffer();
}

/** A successful removal answer with the spec's headers; `headers` adds or overrides. */
export function imageResult(
  png: Buffer,
  width: number,
  height: number,
  headers: Record<string, string> = {},
): FaultStep {
  return respond(200, {
    headers: {
      'content-type': 'image/png',
      'x-width': String(width),
      'x-height': String(height),
      'x-credits-charged': '1',
      'x-request-id': 'req-fault-1',
      'x-foreground-top': '10',
      'x-foreground-left': '10',
      'x-foreground-width': '20',
      'x-foreground-height': '20',
      'x-ratelimit-limit': '60',
      'x-ratelimit-remaining': '59',
      'x-ratelimit-reset': '42',
      ...headers,
    },
    body: png,
  });
}

// ---- server ----

export async function createFaultServer(options: FaultServerOptions = {}): Promise<FaultServer> {
  const script = [...(options.script ?? [])];
  const requests: RecordedRequest[] = [];
  const upstream = options.upstream ? new URL(options.upstream) : undefined;
  const fallback: FaultStep =
    options.fallback ??
    (upstream
      ? proxy()
      : apiError(500, 'internal_error', 'fault server: script used up, no answer scripted for this request'));

  const server = http.createServer((req, res) => {
    const arrivedAt = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks);
        const recorded: RecordedRequest = {
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body,
          bodySize: body.length,
          arrivedAt,
          ...(await parseMultipart(req.headers, body)),
        };
        requests.push(recorded);
        let step = script.shift() ?? fallback;
        while (typeof step === 'function') step = await step(recorded);
        await perform(step, recorded, req, res, upstream);
      })().catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`fault server failed: ${String(error)}`);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...steps) => script.push(...steps),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function perform(
  step: Exclude<FaultStep, (r: RecordedRequest) => unknown>,
  recorded: RecordedRequest,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  upstream: URL | undefined,
): Promise<void> {
  if (step.kind === 'hang') return;
  if ('delayMs' in step && step.delayMs) await new Promise((resolve) => setTimeout(resolve, step.delayMs));
  switch (step.kind) {
    case 'drop':
      req.socket.destroy();
      return;
    case 'respond': {
      const body = step.body === undefined ? Buffer.alloc(0) : Buffer.from(step.body);
      res.writeHead(step.status, { 'content-length': String(body.length), ...step.headers });
      res.end(body);
      return;
    }
    case 'proxy': {
      if (!upstream) throw new Error('proxy step without an upstream');
      await forward(upstream, recorded, res);
      return;
    }
  }
}

function forward(upstream: URL, recorded: RecordedRequest, res: http.ServerResponse): Promise<void> {
  const prefix = upstream.pathname.replace(/\/+$/, '');
  const headers = { ...recorded.headers, host: upstream.host };
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      {
        hostname: upstream.hostname,
        port: upstream.port,
        path: `${prefix}${recorded.path}`,
        method: recorded.method,
        headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on('end', () => {
          recorded.upstreamStatus = answer.statusCode ?? 502;
          resolve();
        });
        answer.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(recorded.body);
  });
}

async function parseMultipart(
  headers: IncomingHttpHeaders,
  body: Buffer,
): Promise<Pick<RecordedRequest, 'fields' | 'files'>> {
  const fields: Record<string, string> = {};
  const files: Record<string, ReceivedFile> = {};
  const contentType = headers['content-type'];
  if (contentType === undefined || !contentType.startsWith('multipart/form-data')) return { fields, files };
  await new Promise<void>((resolve, reject) => {
    const parser = busboy({ headers: { ...headers, 'content-type': contentType } });
    parser.on('field', (name, value) => {
      fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      const parts: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => parts.push(chunk));
      stream.on('end', () => {
        files[name] = { filename: info.filename ?? '', mimeType: info.mimeType, data: Buffer.concat(parts) };
      });
    });
    parser.on('close', () => resolve());
    parser.on('error', reject);
    parser.end(body);
  });
  return { fields, files };
}
