// A release site of the test's own on 127.0.0.1, standing in for github.com/…/releases/download: it serves files
// with ETag and Range (206, If-Range), records each request's path and Range header, and can cut its next answer
// off after some bytes (the connection closed mid-body, as a dropped download).

import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  path: string;
  range: string | undefined;
  ifRange: string | undefined;
}

export interface ReleaseServer {
  url: string;
  readonly requests: SeenRequest[];
  /** Serves `bytes` at /NAME from now on (a new version of the file gets a new ETag). */
  put(name: string, bytes: Buffer): void;
  /** The next answer's body stops after `bytes` bytes and the connection closes. */
  cutNextAfter(bytes: number): void;
  /** Answers wait, unsent, until the function this returns is called. */
  hold(): () => void;
  close(): Promise<void>;
}

export async function startReleaseServer(files: Record<string, Buffer> = {}): Promise<ReleaseServer> {
  const served = new Map(Object.entries(files));
  const requests: SeenRequest[] = [];
  let cutAfter: number | undefined;
  let held: Promise<void> = Promise.resolve();
  const etagOf = (bytes: Buffer) => `"${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}"`;
  const server = http.createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    requests.push({ path, range: req.headers.range, ifRange: req.headers['if-range'] as string | undefined });
    await held;
    const bytes = served.get(path.slice(1));
    if (!bytes) {
      res.writeHead(404).end('not found');
      return;
    }
    const etag = etagOf(bytes);
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const ifRange = req.headers['if-range'];
    let start = 0;
    if (range && (!ifRange || ifRange === etag)) {
      start = Number(range[1]);
      if (start >= bytes.length) {
        res.writeHead(416, { 'content-range': `bytes */${bytes.length}` }).end();
        return;
      }
      res.writeHead(206, {
        etag,
        'content-length': bytes.length - start,
        'content-range': `bytes ${start}-${bytes.length - 1}/${bytes.length}`,
      });
    } else res.writeHead(200, { etag, 'content-length': bytes.length, 'accept-ranges': 'bytes' });
    const body = bytes.subarray(start);
    if (cutAfter === undefined) {
      res.end(body);
      return;
    }
    const cut = cutAfter;
    cutAfter = undefined;
    res.write(body.subarray(0, cut), () => res.socket?.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    put: (name, bytes) => served.set(name, bytes),
    cutNextAfter: (bytes) => {
      cutAfter = bytes;
    },
    hold: () => {
      let release = () => {};
      held = new Promise((resolve) => (release = resolve));
      return () => {
        held = Promise.resolve();
        release();
      };
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
