#!/usr/bin/env node
// The one URL of compose.yaml, as its clients see it (test/container/compose.sh runs these after `up`):
//   balancer-checks.mjs spread URL KEY_JSON PROJECT WORK
//     rmbg's own client (`rmbg remove --api-url URL`, which retries under its Idempotency-Keys) sends 60 images
//     through the balancer; after 20 answers a server with an image in flight is SIGKILLed, after 40 another is
//     stopped (SIGTERM). Every image is answered, all three servers answered some (the balancer's log), and the
//     ledger (GET /v1.0/account, the database's rows) holds one charge per answer.
//   balancer-checks.mjs throttle URL KEY PROJECT IMAGE
//     bad keys from this machine until the servers answer 429, then bad keys from a container on the compose
//     network, a second client address: its answers are 403, never the first client's 429.
//   balancer-checks.mjs routed URL PROJECT
//     waits until the balancer has sent a request to each of the three servers (their /readyz passed its checks).
// Each check prints its figures and exits 1 with the reason when what it sees is not what a deployment relies on.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import sharp from 'sharp';

const [check, url, ...args] = process.argv.slice(2);
const repo = new URL('../../', import.meta.url).pathname;
const IMAGES = 60;

function fail(message) {
  console.error(`balancer check ${check} FAILED: ${message}`);
  process.exit(1);
}

const podmanArgs = (podmanCommand) => ['--runtime', 'runc', ...podmanCommand];
const podman = (...podmanCommand) => execFileSync('podman', podmanArgs(podmanCommand), { encoding: 'utf8' }).trim();
const podmanLater = (...podmanCommand) => promisify(execFile)('podman', podmanArgs(podmanCommand));

/** The rmbg containers of the project, by name, with their addresses on the compose network. */
function servers(project) {
  const names = podman(
    'ps',
    '--filter',
    `label=com.docker.compose.project=${project}`,
    '--filter',
    'label=com.docker.compose.service=rmbg',
    '--format',
    '{{.Names}}',
  )
    .split('\n')
    .filter(Boolean);
  return names.map((name) => ({ name, address: addressOf(name) }));
}

const addressOf = (name) =>
  podman('inspect', '--format', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', name);

/**
 * The balancer's access log (deploy/haproxy.cfg's log-format): per request the client's address, the server's
 * address ("-" when none answered), the status, the balancer's own connection retries, the method and the path
 * (and the line itself).
 */
function balancerLog(project) {
  // (HAProxy's own messages go to stderr, kept out of this script's output.)
  const log = execFileSync('podman', podmanArgs(['logs', `${project}_balancer_1`]), {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const line =
    /^(\S+):\d+ \[\S+\] \S+ \S+\/\S+\(([^)]*)\) \S+ (-?\d+) \S+ \S+ \d+\/\d+\/\d+\/\d+\/\+?(\d+) \S+ "(\S+) (\S+)/;
  return log.split('\n').flatMap((text) => {
    const match = line.exec(text);
    if (!match) return [];
    const [, client, server, status, retries, method, path] = match;
    return [{ client, server, status: Number(status), retries: Number(retries), method, path, text }];
  });
}

async function call(path, key) {
  const answer = await fetch(`${url}${path}`, { headers: { 'X-API-Key': key } });
  return { status: answer.status, text: await answer.text() };
}

async function balance(key) {
  const account = await call('/v1.0/account', key);
  if (account.status !== 200) fail(`GET /v1.0/account answered ${account.status}: ${account.text}`);
  return JSON.parse(account.text).data.attributes.credits.total;
}

/** Waits until the balancer has sent /readyz to every server: each is in its rotation. */
async function untilEveryServerRouted(project, addresses) {
  const deadline = Date.now() + 120_000;
  for (;;) {
    for (let n = 0; n < addresses.length; n++) await call('/readyz', '');
    const routed = new Set(balancerLog(project).flatMap((entry) => (entry.path === '/readyz' ? [entry.server] : [])));
    if (addresses.every((address) => routed.has(address))) return;
    if (Date.now() > deadline) {
      const log = execFileSync('podman', podmanArgs(['logs', '--tail', '30', `${project}_balancer_1`]), {
        encoding: 'utf8',
      });
      fail(`the balancer routed /readyz to ${[...routed]} only, not to all of ${addresses}:\n${log}`);
    }
    await delay(500);
  }
}

/** A server among `candidates` with an image in its engine (rmbg_queue_depth ≥ 1), as its /metrics says. */
async function busyServer(candidates, token, running) {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && running()) {
    for (const server of candidates) {
      const metrics = await fetch(`http://${server.address}:5000/metrics`, {
        headers: { Authorization: `Bearer ${token}` },
      }).then((answer) => answer.text());
      if (Number(/^rmbg_queue_depth (\d+)$/m.exec(metrics)?.[1]) >= 1) return server;
    }
    await delay(50);
  }
  return fail('no server had an image in flight to interrupt');
}

if (check === 'routed') {
  const [project] = args;
  const three = servers(project);
  if (three.length !== 3) fail(`expected 3 servers, found ${three.map((server) => server.name)}`);
  await untilEveryServerRouted(
    project,
    three.map((server) => server.address),
  );
  console.log(`routed: the balancer sends requests to ${three.map((server) => server.name).join(', ')}`);
} else if (check === 'spread') {
  const [keyJson, project, work] = args;
  const { key, account } = JSON.parse(keyJson);
  const token = process.env.RMBG_TEST_METRICS_TOKEN;
  const three = servers(project);

  // 60 different photos (crops of one sample), so each is its own request with its own Idempotency-Key.
  const input = `${work}/in`;
  mkdirSync(input);
  for (let n = 0; n < IMAGES; n++) {
    await sharp(`${repo}samples/chelsea.png`)
      .extract({ left: n * 2, top: n, width: 240, height: 180 })
      .png()
      .toFile(`${input}/${String(n).padStart(2, '0')}.png`);
  }
  const before = await balance(key);
  const logBefore = balancerLog(project).length;
  const client = spawn(
    process.execPath,
    [`${repo}bin/rmbg.js`, 'remove', input, '-o', `${work}/out`, '--api-url', url, '--concurrency', '3', '--json'],
    {
      env: { ...process.env, RMBG_API_KEY: key, XDG_CONFIG_HOME: `${work}/config` },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise((resolve) => client.on('exit', (code) => resolve(code)));
  let running = true;
  exited.then(() => {
    running = false;
  });
  let answered = 0;
  let summary;
  const interruptions = [];
  let stopping;
  for await (const text of createInterface({ input: client.stdout })) {
    const line = JSON.parse(text);
    if (line.summary) {
      summary = line;
      continue;
    }
    answered++;
    if (answered === 20) {
      const victim = await busyServer(three, token, () => running);
      podman('kill', '--signal', 'KILL', victim.name);
      interruptions.push(`${victim.name} SIGKILLed with an image in flight after ${answered} answers`);
      victim.killed = true;
    } else if (answered === 40) {
      const alive = three.filter((server) => !server.killed);
      const stopped = await busyServer(alive, token, () => running);
      // As `docker compose stop`: SIGTERM, SIGKILL after the grace period (compose.yaml's 130 s).
      stopping = podmanLater('stop', '--time', '130', stopped.name).then(() => stopped);
      interruptions.push(`${stopped.name} stopped (SIGTERM) with an image in flight after ${answered} answers`);
    }
  }
  const exitCode = await exited;
  if (exitCode !== 0) fail(`rmbg remove exited ${exitCode}: ${JSON.stringify(summary)}`);
  const outputs = readdirSync(`${work}/out`).filter((name) => name.endsWith('.png'));
  if (outputs.length !== IMAGES) fail(`${outputs.length} cut-outs of ${IMAGES}: ${JSON.stringify(summary)}`);
  if (!stopping) fail('the run ended before a server could be stopped');
  const stopped = await stopping;
  const stoppedExit = podman('inspect', '--format', '{{.State.ExitCode}}', stopped.name);
  const { stderr: stopLog } = await podmanLater('logs', stopped.name);
  if (stoppedExit !== '0' || !stopLog.includes('SIGTERM: finishing requests in flight'))
    fail(`${stopped.name} exited ${stoppedExit} after SIGTERM:\n${stopLog}`);

  // The ledger: the balance went down by one credit per image, and the database holds as many charges, less
  // the refunds of the request that the SIGKILLed server never answered.
  const after = await balance(key);
  const rows = podman(
    'exec',
    `${project}_db_1`,
    'psql',
    '--username',
    'rmbg',
    '--dbname',
    'rmbg',
    '-tAc',
    `SELECT kind, count(*), sum(amount) FROM credit_ledger WHERE account_id = '${account}' GROUP BY kind`,
  );
  const ledger = Object.fromEntries(
    rows.split('\n').map((row) => {
      const [kind, count, sum] = row.split('|');
      return [kind, { count: Number(count), sum: Number(sum) }];
    }),
  );
  const charges = ledger.charge?.count ?? 0;
  const refunds = ledger.refund?.count ?? 0;
  if (before - after !== IMAGES || charges - refunds !== IMAGES)
    fail(`${IMAGES} answers, balance ${before} → ${after}, ledger ${JSON.stringify(ledger)}`);

  // Who answered: the balancer's log, by server address (a server restarted by its restart policy keeps its name).
  const names = new Map(three.map((server) => [server.address, server.name]));
  for (const server of servers(project)) names.set(server.address, server.name);
  const posts = balancerLog(project)
    .slice(logBefore)
    .filter((entry) => entry.path === '/v1.0/removebg');
  const perServer = new Map(three.map((server) => [server.name, 0]));
  const byStatus = {};
  for (const entry of posts) {
    byStatus[entry.status] = (byStatus[entry.status] ?? 0) + 1;
    const name = names.get(entry.server);
    if (entry.status === 200 && name) perServer.set(name, perServer.get(name) + 1);
  }
  if ([...perServer.values()].some((count) => count === 0))
    fail(`not every server answered: ${JSON.stringify(Object.fromEntries(perServer))}`);
  const connectionRetries = posts.reduce((sum, entry) => sum + entry.retries, 0);
  for (const line of interruptions) console.log(`spread: ${line}`);
  console.log(
    `spread: ${IMAGES} images through ${url} answered by ${[...perServer].map(([name, n]) => `${name} ${n}`).join(', ')}`,
  );
  console.log(
    `spread: ${posts.length} POSTs reached the balancer for ${IMAGES} images (${posts.length - IMAGES} client retries) by status ${JSON.stringify(byStatus)}; the balancer itself retried ${connectionRetries} connections`,
  );
  console.log(
    `spread: ledger ${charges} charges - ${refunds} refunds = ${IMAGES} = the answers; balance ${before} → ${after}; ${stopped.name} exited 0 after SIGTERM`,
  );
  console.log(`spread: rmbg remove said ${JSON.stringify(summary)}`);
  // The attempts not answered 200 at once: the balancer's line for each.
  for (const entry of posts.filter((post) => post.status !== 200 || post.retries > 0))
    console.log(`spread: ${entry.text}`);
} else if (check === 'throttle') {
  const [key, project, image] = args;
  const badKey = `rmbg_${'x'.repeat(43)}`;
  // The first client, this machine: bad keys until a server throttles its address.
  let first;
  for (let n = 1; n <= 150 && !first; n++) {
    const answer = await call('/v1.0/account', badKey);
    if (answer.status === 429) first = n;
    else if (answer.status !== 403) fail(`a bad key was answered ${answer.status}: ${answer.text}`);
  }
  if (!first) fail('150 bad keys from one address were never throttled');
  const valid = await call('/v1.0/account', key);
  if (valid.status !== 200) fail(`a valid key from the throttled address was answered ${valid.status}`);
  // The second client: a container on the compose network, through the balancer's name, 9 bad keys (3 per server).
  const script = `
    const statuses = [];
    for (let n = 0; n < 9; n++) {
      const answer = await fetch('http://balancer:5000/v1.0/account', { headers: { 'X-API-Key': ${JSON.stringify(badKey)} } });
      statuses.push(answer.status);
    }
    console.log(JSON.stringify(statuses));`;
  const second = JSON.parse(
    podman(
      'run',
      '--rm',
      '--ulimit',
      'nofile=1024:1024',
      '--ulimit',
      'nproc=1024:1024',
      '--network',
      `${project}_default`,
      '--entrypoint',
      'node',
      image,
      '--input-type=module',
      '-e',
      script,
    ),
  );
  if (second.some((status) => status !== 403)) fail(`the second client's bad keys were answered ${second}`);
  // The second client's requests met a server that throttles the first client: the servers told them apart.
  const accountCalls = balancerLog(project).filter((entry) => entry.path === '/v1.0/account');
  const throttling = new Set(accountCalls.flatMap((entry) => (entry.status === 429 ? [entry.server] : [])));
  const secondClient = accountCalls.at(-1).client;
  if (!accountCalls.some((entry) => entry.client === secondClient && throttling.has(entry.server)))
    fail(`the second client (${secondClient}) met none of the servers throttling the first (${[...throttling]})`);
  const firstClient = accountCalls[0].client;
  if (firstClient === secondClient) fail(`the balancer saw one address for both clients: ${firstClient}`);
  console.log(
    `throttle: client ${firstClient}: 429 after ${first - 1} bad keys (its valid key still 200); client ${secondClient}: 9 bad keys, all 403, from the same servers`,
  );
} else {
  fail(`unknown check; see the usage at the top of ${new URL(import.meta.url).pathname}`);
}
