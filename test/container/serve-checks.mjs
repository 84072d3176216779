#!/usr/bin/env node
// The HTTP side of test/container/run.sh: what a client of the containerised `rmbg serve` sees. Each check
// prints one line and exits 1 with the reason when what it sees is not what a deployment relies on.
//   serve-checks.mjs ready URL                      waits for /readyz 200 (the container's log on failure)
//   serve-checks.mjs cutout URL KEY                 a cut-out of samples/chelsea.png: a PNG whose alpha is a mask
//   serve-checks.mjs drain URL KEY CONTAINER TOKEN  `podman stop` while an image is in the engine: answered, exit 0
//   serve-checks.mjs balance URL KEY EXPECTED       GET /v1.0/account: the key's credits
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import sharp from 'sharp';

const sample = readFileSync(new URL('../../samples/chelsea.png', import.meta.url));
const [check, url, ...args] = process.argv.slice(2);

function fail(message) {
  console.error(`container check ${check} FAILED: ${message}`);
  process.exit(1);
}

function upload(key) {
  const form = new FormData();
  form.append('image_file', new Blob([sample], { type: 'image/png' }), 'chelsea.png');
  form.append('format', 'png');
  return fetch(`${url}/v1.0/removebg`, { method: 'POST', headers: { 'X-API-Key': key }, body: form });
}

/** The cut-out's alpha, as the user sees it: over 5 % transparent and 5 % opaque (the cat kept, the room gone). */
async function expectCutout(answer) {
  const body = Buffer.from(await answer.arrayBuffer());
  if (answer.status !== 200) fail(`status ${answer.status}: ${body.toString().slice(0, 300)}`);
  if (answer.headers.get('content-type') !== 'image/png') fail(`content-type ${answer.headers.get('content-type')}`);
  const { data, info } = await sharp(body).ensureAlpha().extractChannel(3).raw().toBuffer({ resolveWithObject: true });
  const pixels = info.width * info.height;
  let transparent = 0;
  let opaque = 0;
  for (const alpha of data) {
    if (alpha < 16) transparent++;
    else if (alpha > 240) opaque++;
  }
  if (transparent / pixels <= 0.05 || opaque / pixels <= 0.05)
    fail(`alpha is not a mask: ${transparent} transparent and ${opaque} opaque of ${pixels} pixels`);
  return `${info.width}×${info.height} PNG, ${Math.round((100 * transparent) / pixels)} % transparent`;
}

/** Whether the server answers; undefined while nothing listens (starting, or gone). */
async function status(path, headers = {}) {
  try {
    const answer = await fetch(`${url}${path}`, { headers });
    return { status: answer.status, text: await answer.text() };
  } catch {
    return undefined;
  }
}

async function queueDepth(token) {
  const metrics = await status('/metrics', { Authorization: `Bearer ${token}` });
  if (metrics?.status !== 200) fail(`/metrics answered ${metrics?.status ?? 'nothing'}`);
  return Number(/^rmbg_queue_depth (\d+)$/m.exec(metrics.text)?.[1]);
}

const podman = (...podmanArgs) => execFileSync('podman', podmanArgs, { encoding: 'utf8' }).trim();
/** What the server wrote, stdout and stderr (its messages), in the order `podman logs` gives them. */
const logsOf = (container) => {
  const { stdout, stderr } = spawnSync('podman', ['logs', container], { encoding: 'utf8' });
  return stdout + stderr;
};

if (check === 'ready') {
  const [container] = args;
  // Loading the model and optimising its graph takes a while on a busy machine: wait for the answer (or the exit).
  for (;;) {
    const ready = await status('/readyz');
    if (ready?.status === 200) {
      console.log(`ready: ${ready.text}`);
      break;
    }
    if (podman('inspect', '--format', '{{.State.Running}}', container) !== 'true')
      fail(`the container stopped before it was ready:\n${logsOf(container)}`);
    await delay(500);
  }
} else if (check === 'cutout') {
  const [key] = args;
  console.log(`cutout: ${await expectCutout(await upload(key))}`);
} else if (check === 'drain') {
  const [key, container, token] = args;
  let answered = false;
  const inFlight = upload(key).finally(() => {
    answered = true;
  });
  while (!answered && (await queueDepth(token)) < 1);
  if (answered) fail('the request was answered before the signal could be sent (nothing was in flight)');
  // As `docker stop`: the image's STOPSIGNAL, then SIGKILL after the grace period.
  const stopped = promisify(execFile)('podman', ['stop', '--time', '130', container]);
  const cutout = await expectCutout(await inFlight.catch((error) => fail(`request in flight failed: ${error}`)));
  await stopped;
  const exitCode = podman('inspect', '--format', '{{.State.ExitCode}}', container);
  const log = logsOf(container);
  if (exitCode !== '0') fail(`exit code ${exitCode} after SIGTERM:\n${log}`);
  if (!log.includes('SIGTERM: finishing requests in flight')) fail(`the server did not say it drained:\n${log}`);
  console.log(`drain: the request in flight at SIGTERM was answered (${cutout}), then exit code 0`);
} else if (check === 'balance') {
  const [key, expected] = args;
  const account = await status('/v1.0/account', { 'X-API-Key': key });
  if (account?.status !== 200) fail(`GET /v1.0/account answered ${account?.status}: ${account?.text}`);
  const total = JSON.parse(account.text).data.attributes.credits.total;
  if (total !== Number(expected)) fail(`the key has ${total} credits, expected ${expected}: ${account.text}`);
  console.log(`balance: ${total} credits`);
} else {
  fail(`unknown check; see the usage at the top of ${new URL(import.meta.url).pathname}`);
}
