// Attacks on the real `rmbg serve` (real SQLite, 127.0.0.1, a tiny identity model: no attack reaches the
// model), one shared server: each test is an attack from issue #10 and what a user sees while it runs.

import { describe, expect, it } from 'vitest';
import { samplePeakRss, rssBytes } from '../helpers/peak-rss.js';
import { answerCode, socketBufferBytes, uploadUntilAnswered } from '../helpers/raw-upload.js';
import { trickle, type Trickler } from '../helpers/trickle-client.js';
import { balance, call, createKey, identityServeForFile } from '../helpers/serve-harness.js';

const MB = 1024 * 1024;
const UPLOAD_BYTES = 30 * MB;
const HEADERS_TIMEOUT_S = 2;
const BODY_TIMEOUT_S = 3;

// Failed authentications are not throttled here (the unit tests cover that): the upload attack is 30 of them.
// Short headers and body timeouts, so the slow-client test sees the server close connections.
const at = identityServeForFile([
  '--rate-limit',
  '1000',
  '--max-auth-failures',
  '1000',
  '--headers-timeout',
  String(HEADERS_TIMEOUT_S),
  '--body-timeout',
  String(BODY_TIMEOUT_S),
  // The slow-client attack is 200 connections from 127.0.0.1 (serve-fair-connections tests the per-address cap).
  '--max-connections-per-address',
  '1000',
]);

describe('bodies are not read before authentication', () => {
  it('30 concurrent unauthenticated 30 MB uploads: each 403 before its body is sent, RSS grows < 200 MB, a keyed request is served meanwhile', async () => {
    const { key } = await createKey(at.dataDir, 5);
    const pid = at.server.pid;
    const before = rssBytes(pid);
    const peak = samplePeakRss(pid);
    const attacks = Array.from({ length: 30 }, () =>
      uploadUntilAnswered(`${at.server.url}/v1.0/removebg`, {
        headers: { 'content-type': 'application/json' },
        prefix: '{"image_file_b64":"',
        totalBytes: UPLOAD_BYTES,
      }),
    );
    // An account query, not an image: a run of the model alone takes hundreds of MB, which would hide what the attack costs.
    const honest = call(`${at.server.url}/v1.0/account`, { headers: { 'X-API-Key': key } });
    const answers = await Promise.all(attacks);
    const served = await honest;
    const grown = peak.stop() - before;

    for (const answer of answers) {
      expect(answer.status).toBe(403);
      expect(answerCode(answer)).toBe('missing_api_key');
      // Answered without waiting for the body: no more was sent than the kernel's socket buffers hold (up to 36 MiB
      // on a machine whose tcp_rmem reaches 32 MiB), and never the whole body, which a server reading it first needs.
      expect(answer.sentBeforeAnswer).toBeLessThan(Math.min(UPLOAD_BYTES, socketBufferBytes() + MB));
    }
    expect(grown).toBeLessThan(200 * MB);
    expect(served.status).toBe(200);
    expect(await balance(at.server.url, key)).toMatchObject({ total: 5 });
  });
});

describe('slow clients', () => {
  it('200 connections trickling headers or bodies: a normal client is served within 5 s; the server closes them at its timeouts', async () => {
    const [normal, slowA, slowB] = await Promise.all([
      createKey(at.dataDir, 5),
      createKey(at.dataDir, 5),
      createKey(at.dataDir, 5),
    ]);
    const url = new URL(at.server.url);
    const slow: Trickler[] = [];
    for (let i = 0; i < 100; i++)
      slow.push(trickle(url, { head: 'POST /v1.0/removebg HTTP/1.1\r\nHost: x\r\nX-Slow: ', body: 'a' }));
    for (let i = 0; i < 100; i++) {
      const key = i % 2 === 0 ? slowA.key : slowB.key;
      const head = `POST /v1.0/removebg HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"image_file_b64":"`;
      slow.push(trickle(url, { head, body: 'A' }));
    }
    // A normal client's request (an account query: a model run alone takes seconds on a loaded 2-core machine,
    // which would measure the model, not the slow clients), sent once every slow connection is open.
    await Promise.all(slow.map((client) => client.connected));
    const started = performance.now();
    const served = await call(`${at.server.url}/v1.0/account`, { headers: { 'X-API-Key': normal.key } });
    const servedMs = performance.now() - started;
    expect(served.status).toBe(200);
    expect(servedMs).toBeLessThan(5000);

    const ends = await Promise.all(slow.map((client) => client.ended));
    const headerEnds = ends.slice(0, 100);
    const bodyEnds = ends.slice(100);
    // Headers never finished: 408 and closed once the headers timeout passed (checked every second).
    for (const end of headerEnds) {
      expect(end.status).toBe(408);
      expect(end.closedAfterMs).toBeLessThan((HEADERS_TIMEOUT_S + 3) * 1000);
    }
    // Bodies: 4 per key may upload (--max-in-flight-per-key) and get 408 at the body timeout; the rest get 429 at once.
    const statuses = bodyEnds.map((end) => end.status).sort();
    expect(statuses.filter((status) => status === 408)).toHaveLength(8);
    expect(statuses.filter((status) => status === 429)).toHaveLength(92);
    for (const end of bodyEnds) expect(end.closedAfterMs).toBeLessThan((BODY_TIMEOUT_S + 3) * 1000);
    expect(await balance(at.server.url, slowA.key)).toMatchObject({ total: 5 });
  });
});
