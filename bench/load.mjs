// Load on the real `rmbg serve` (real model, real SQLite, loopback only): autocannon with 50, 100 and 200
// concurrent clients, each stage bounded in time, then stops by itself. Reports p50 / p99 latency, status
// counts and the server's peak RSS, checks that only 200, 429 and 503-with-Retry-After were seen, and that
// the ledger balances exactly: credits taken = images answered 200, every other charge refunded.
//
//   npm run load            (LOAD_SECONDS=15 per stage, LOAD_STAGES=50,100,200, LOAD_KEYS=20)

import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { rssOf } from './lib/memory-soak.mjs';
import { listeningUrl } from './lib/serve-url.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const CLI = join(ROOT, 'bin', 'rmbg.js');
const SECONDS = Number(process.env.LOAD_SECONDS ?? 15);
const STAGES = (process.env.LOAD_STAGES ?? '50,100,200').split(',').map(Number);
const KEYS = Number(process.env.LOAD_KEYS ?? 20);
const CREDITS = 100_000;

async function startServer(dataDir) {
  const child = spawn('node', [CLI, 'serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const url = await listeningUrl(child, () => stderr);
  return { child, url, stderr: () => stderr };
}

function multipartBody(boundary) {
  const image = readFileSync(join(ROOT, 'samples', 'rocket.jpg'));
  return Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="size"\r\n\r\npreview\r\n`),
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="image_file"; filename="rocket.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
    ),
    image,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
}

async function stage(url, keys, connections, badRetryAfter) {
  const boundary = 'rmbgload';
  let next = 0;
  return autocannon({
    url: `${url}/v1.0/removebg`,
    connections,
    duration: SECONDS,
    timeout: 180,
    method: 'POST',
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: multipartBody(boundary),
    requests: [
      {
        setupRequest: (request) => ({
          ...request,
          headers: { ...request.headers, 'x-api-key': keys[next++ % keys.length] },
        }),
        onResponse: (status, _body, _context, headers) => {
          const flat = Array.isArray(headers)
            ? Object.fromEntries(
                headers.flatMap((value, i) => (i % 2 ? [] : [[String(value).toLowerCase(), headers[i + 1]]])),
              )
            : headers;
          if ((status === 429 || status === 503) && !flat['retry-after']) badRetryAfter.count += 1;
        },
      },
    ],
  });
}

const dataDir = mkdtempSync(join(tmpdir(), 'rmbg-load-'));
const keys = [];
for (let i = 0; i < KEYS; i++) {
  keys.push(
    JSON.parse(
      execFileSync('node', [CLI, 'keys', 'create', '--json', '--credits', String(CREDITS), '--data-dir', dataDir], {
        encoding: 'utf8',
      }),
    ).key,
  );
}
const server = await startServer(dataDir);
const pid = server.child.pid;
let peak = rssOf(pid);
const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 100);
const totals = { 200: 0 };
const unexpected = {};
const badRetryAfter = { count: 0 };
let errors = 0;
let timeouts = 0;
console.log(
  `rmbg serve ${server.url}: ${KEYS} keys, stages ${STAGES.join(', ')} clients x ${SECONDS} s, POST rocket.jpg (640x427) size=preview`,
);
try {
  for (const connections of STAGES) {
    const result = await stage(server.url, keys, connections, badRetryAfter);
    const statuses = {};
    for (const [code, { count }] of Object.entries(result.statusCodeStats)) {
      statuses[code] = count;
      totals[code] = (totals[code] ?? 0) + count;
      if (!['200', '429', '503'].includes(code)) unexpected[code] = (unexpected[code] ?? 0) + count;
    }
    errors += result.errors;
    timeouts += result.timeouts;
    console.log(
      `${String(connections).padStart(3)} clients: ${result.requests.total} answers, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, ` +
        `statuses ${JSON.stringify(statuses)}, errors ${result.errors} (timeouts ${result.timeouts}), peak RSS so far ${(peak / 2 ** 20).toFixed(0)} MiB`,
    );
  }
  // Requests cut by autocannon at a stage's end are cancelled and refunded by the server: wait until it is idle.
  await new Promise((resolve) => setTimeout(resolve, 3000));
} finally {
  clearInterval(sampler);
  server.child.kill('SIGTERM');
  await new Promise((resolve) => server.child.once('exit', resolve));
}

// The store's own connection (node:sqlite or better-sqlite3, whichever this Node uses).
const { openSqlite } = await import(new URL('../dist/store/sqlite-connection.js', import.meta.url).href);
const db = await openSqlite(join(dataDir, 'rmbg.sqlite'), { readonly: true });
const ledger = db
  .prepare("SELECT kind, COUNT(*) AS n, SUM(amount) AS sum FROM credit_ledger WHERE kind != 'grant' GROUP BY kind")
  .all();
const balances = db.prepare('SELECT SUM(amount) AS sum FROM credit_ledger').get().sum;
const kept = db
  .prepare(
    "SELECT COUNT(*) AS n FROM credit_ledger c WHERE kind = 'charge' AND NOT EXISTS (SELECT 1 FROM credit_ledger r WHERE r.request_id = c.request_id AND r.kind = 'refund')",
  )
  .get().n;
// The server's own record of what it answered 200 (autocannon stops counting at a stage's end, while the
// last answers may still be on their way): every kept charge must be one of these, and nothing else.
const served = db
  .prepare("SELECT COUNT(*) AS n FROM usage_records WHERE endpoint = 'removebg' AND status = 200 AND credits > 0")
  .get().n;
const keptNotServed = db
  .prepare(
    "SELECT COUNT(*) AS n FROM credit_ledger c WHERE kind = 'charge' AND NOT EXISTS (SELECT 1 FROM credit_ledger r WHERE r.request_id = c.request_id AND r.kind = 'refund') AND NOT EXISTS (SELECT 1 FROM usage_records u WHERE u.request_id = c.request_id AND u.status = 200)",
  )
  .get().n;
db.close();
rmSync(dataDir, { recursive: true, force: true });

const taken = KEYS * CREDITS - balances;
console.log(
  `ledger: ${JSON.stringify(ledger)}; credits taken ${taken}, charges kept ${kept}, answered 200 by the server ${served} (seen by autocannon ${totals[200]}), kept charges without a 200: ${keptNotServed}`,
);
console.log(
  `peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB; statuses other than 200/429/503: ${JSON.stringify(unexpected)}; 429/503 without Retry-After: ${badRetryAfter.count}; socket errors ${errors} (timeouts ${timeouts})`,
);
const balanced = taken === served && kept === served && keptNotServed === 0;
console.log(
  balanced ? 'ledger balances exactly: credits taken = charges kept = images answered 200' : 'LEDGER MISMATCH',
);
process.exitCode = Object.keys(unexpected).length === 0 && badRetryAfter.count === 0 && balanced ? 0 : 1;
