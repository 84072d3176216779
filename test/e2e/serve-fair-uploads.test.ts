// Upload places shared fairly (issue #38), against the real `rmbg serve` with --max-uploads 4: one key dripping
// four bodies a few bytes a second holds one place (its share), not all four, and that one only until its pace
// is judged; another key's upload is served meanwhile.

import net from 'node:net';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { balance, call, createKey, identityServeForFile } from '../helpers/serve-harness.js';

/** The server's body timeout (the default): the dripping body must be cut well before it. */
const BODY_TIMEOUT_S = 30;

const at = identityServeForFile(['--max-uploads', '4', '--rate-limit', '1000']);

interface Drip {
  /** The first answer line: 100 once the body may be sent (an upload place was taken), else the final status. */
  placed: Promise<number>;
  /** The final status and error code, and the milliseconds from the first byte dripped until the server closed. */
  ended: Promise<{ status: number; code: string; closedAfterMs: number }>;
}

/** A body of 100,000 bytes declared, sent a byte every 250 ms once the server says 100 Continue. */
function drip(url: URL, key: string): Drip {
  let markPlaced: (status: number) => void = () => undefined;
  const placed = new Promise<number>((resolve) => (markPlaced = resolve));
  const ended = new Promise<{ status: number; code: string; closedAfterMs: number }>((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let received = '';
    let timer: NodeJS.Timeout | undefined;
    let dripping = performance.now();
    const giveUp = setTimeout(() => socket.destroy(), 60_000);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const first = /^HTTP\/1\.1 (\d{3})/.exec(received);
      if (first) markPlaced(Number(first[1]));
      if (first?.[1] === '100' && timer === undefined) {
        dripping = performance.now();
        socket.write('{"image_file_b64":"');
        timer = setInterval(() => socket.writable && socket.write('A'), 250);
      }
    });
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      markPlaced(0);
      const final = [...received.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((match) => Number(match[1])).pop() ?? 0;
      const code = /"code":"([a-z_]+)"/.exec(received)?.[1] ?? '';
      resolve({ status: final, code, closedAfterMs: performance.now() - dripping });
    });
    socket.write(
      `POST /v1.0/removebg HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n`,
    );
  });
  return { placed, ended };
}

describe('upload places', () => {
  it('one key dripping 4 bodies holds 1 of 4 places and is cut early (408); another key uploads meanwhile', async () => {
    const [dripper, honest] = await Promise.all([createKey(at.dataDir, 5), createKey(at.dataDir, 5)]);
    const url = new URL(at.server.url);
    const drips = Array.from({ length: 4 }, () => drip(url, dripper.key));
    // Each has its answer to the head: a place (100 Continue) or a refusal.
    const placed = await Promise.all(drips.map((client) => client.placed));
    expect(placed.filter((status) => status === 100)).toHaveLength(1);
    expect(placed.filter((status) => status === 429)).toHaveLength(3);

    const photo = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#336699' } })
      .png()
      .toBuffer();
    const served = await call(`${at.server.url}/v1.0/removebg`, {
      method: 'POST',
      headers: { 'x-api-key': honest.key, 'content-type': 'application/json' },
      body: JSON.stringify({ image_file_b64: photo.toString('base64') }),
    });
    expect(served.status).toBe(200);

    const ends = await Promise.all(drips.map((client) => client.ended));
    const cut = ends.filter((end) => end.status === 408);
    expect(cut).toHaveLength(1);
    expect(cut[0]?.code).toBe('request_timeout');
    // Cut once its pace is judged (5 s, checked every second), not at the body timeout.
    expect(cut[0]?.closedAfterMs).toBeLessThan((BODY_TIMEOUT_S / 3) * 1000);
    for (const end of ends.filter((each) => each.status !== 408)) expect(end.code).toBe('rate_limited');
    expect(await balance(at.server.url, dripper.key)).toMatchObject({ total: 5 });
    expect(await balance(at.server.url, honest.key)).toMatchObject({ total: 4 });
  }, 120_000);
});
