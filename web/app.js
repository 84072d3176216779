// rmbg's web page: sends each photo to this server's public API (POST /v1.0/removebg) with the key the
// user typed, shows the result beside the original, and the credits left (GET /v1.0/account). Plain JS,
// no build step, nothing from another host: the server's Content-Security-Policy allows only itself.
// biome-ignore lint/suspicious/noRedundantUseStrict: a classic script (index.html loads it without type=module)
'use strict';

const KEY_STORAGE = 'rmbg.apiKey';
const $ = (selector) => document.querySelector(selector);

const keyInput = $('#key');
const creditsLine = $('#credits');
const fileInput = $('#files');
const drop = $('#drop');
const results = $('#results');
const useBg = $('#use-bg');
const bgColor = $('#bg-color');

// The key lives for this browser tab's session only (sessionStorage), never in localStorage or a cookie.
keyInput.value = sessionStorage.getItem(KEY_STORAGE) ?? '';
keyInput.addEventListener('input', () => sessionStorage.setItem(KEY_STORAGE, keyInput.value.trim()));
useBg.addEventListener('change', () => (bgColor.disabled = !useBg.checked));
$('#check-key').addEventListener('click', () => void showCredits());
$('#settings').addEventListener('submit', (event) => event.preventDefault());
const formats = outputFormats();
void showFormatChoices();

fileInput.addEventListener('change', () => {
  void processAll([...fileInput.files]);
  fileInput.value = '';
});
for (const type of ['dragenter', 'dragover']) {
  drop.addEventListener(type, (event) => {
    event.preventDefault();
    drop.classList.add('over');
  });
}
for (const type of ['dragleave', 'drop']) drop.addEventListener(type, () => drop.classList.remove('over'));
drop.addEventListener('drop', (event) => {
  event.preventDefault();
  void processAll([...event.dataTransfer.files]);
});

/** One photo at a time: the server queues anyway, and the rate limit counts requests per minute. */
async function processAll(files) {
  if (files.length === 0) return;
  if (!keyInput.value.trim()) {
    showCreditsError('Enter an API key first.');
    keyInput.focus();
    return;
  }
  $('#empty').hidden = true;
  const entries = files.map((file) => addEntry(file));
  for (const [index, file] of files.entries()) await processOne(file, entries[index]);
  await showCredits();
}

function addEntry(file) {
  const item = $('#result-template').content.firstElementChild.cloneNode(true);
  item.querySelector('.name').textContent = file.name;
  setStatus(item, 'Waiting…');
  results.append(item);
  return item;
}

function setStatus(item, text, kind = '') {
  const status = item.querySelector('.status');
  status.textContent = text;
  status.className = `status ${kind}`.trim();
}

async function processOne(file, item) {
  setStatus(item, 'Removing the background…');
  const form = new FormData();
  form.append('image_file', file, file.name);
  form.append('size', $('#size').value);
  if ($('#format').value) form.append('format', $('#format').value);
  if ($('#crop').checked) form.append('crop', 'true');
  if (useBg.checked) form.append('bg_color', bgColor.value);
  let response;
  try {
    response = await fetch('/v1.0/removebg', {
      method: 'POST',
      headers: { 'X-API-Key': keyInput.value.trim() },
      body: form,
    });
  } catch {
    setStatus(item, 'The server could not be reached. Is rmbg serve still running?', 'error');
    return;
  }
  if (!response.ok) {
    setStatus(item, await explainError(response), 'error');
    return;
  }
  const blob = await response.blob();
  const width = response.headers.get('X-Width');
  const height = response.headers.get('X-Height');
  const charged = response.headers.get('X-Credits-Charged');
  const format = (await formats).find((row) => row.mediaType === blob.type);
  showResult(item, file, blob, { width, height }, format);
  setStatus(
    item,
    `Done: ${width} × ${height} ${format?.title ?? blob.type}, ${charged} credit${charged === '1' ? '' : 's'}.`,
    'done',
  );
}

/** The output formats as the API's OpenAPI document describes its `format` field: each value with its title,
 * media type and file extension (x-output-formats), and what auto chooses (x-auto-format). Empty if unreadable. */
async function outputFormats() {
  try {
    const response = await fetch('/v1.0/openapi.json');
    const document = await response.json();
    const field = document.components.schemas.RemoveRequest_multipart.properties.format;
    const rows = field['x-output-formats'];
    const auto = field['x-auto-format'];
    return field.enum.map((value) =>
      value === 'auto'
        ? { value, title: `auto (${rows[auto.transparent].title} if transparent, else ${rows[auto.opaque].title})` }
        : { value, ...rows[value], opaque: !rows[value].keepsAlpha },
    );
  } catch {
    return [];
  }
}

/** The Format choices in the document's order (auto first); without them the field is not sent and the API's
 * default holds. */
async function showFormatChoices() {
  for (const format of await formats) {
    $('#format').append(new Option(format.opaque ? `${format.title} (opaque)` : format.title, format.value));
  }
}

function showResult(item, file, blob, size, format) {
  const after = item.querySelector('.after');
  const before = item.querySelector('.before');
  const stage = item.querySelector('.stage');
  const slider = item.querySelector('input[type=range]');
  const resultUrl = URL.createObjectURL(blob);
  after.src = resultUrl;
  after.alt = `${file.name} without its background (${size.width} × ${size.height})`;
  after.dataset.width = size.width;
  after.dataset.height = size.height;
  before.src = URL.createObjectURL(file);
  before.alt = `${file.name}, original`;
  // The original covers the cutout from the left edge to the slider (CSSOM, which the CSP allows).
  const move = () => stage.style.setProperty('--pos', `${slider.value}%`);
  slider.addEventListener('input', move);
  slider.setAttribute('aria-valuetext', 'original on the left, cutout on the right');
  move();
  const link = item.querySelector('.download');
  link.href = resultUrl;
  link.download = `${file.name.replace(/\.[^.]*$/, '')}${format?.extension ?? ''}`;
  link.textContent = `Download ${link.download}`;
  item.querySelector('.compare').hidden = false;
}

/** The API's error in plain words, by status; the server's own detail for the rest. */
async function explainError(response) {
  let detail = '';
  let code = '';
  try {
    const body = await response.json();
    detail = body.errors?.[0]?.detail ?? body.errors?.[0]?.title ?? '';
    code = body.errors?.[0]?.code ?? '';
  } catch {
    // not JSON: keep the status alone
  }
  switch (response.status) {
    case 402:
      return 'Out of credits: the account of this key has too few credits left. Add some with rmbg credits add.';
    case 403:
      return code === 'plan_without_api_access'
        ? 'This key\u2019s plan has no API access.'
        : 'The API key was refused. Check the key (it is shown once, by rmbg keys create).';
    case 429: {
      const wait = response.headers.get('Retry-After');
      const after = wait ? `${wait} second${wait === '1' ? '' : 's'}` : 'a minute';
      return `Too many requests for this key. Wait ${after} and try again.`;
    }
    case 400:
      return `This file cannot be used: ${(detail || 'not a JPG, PNG or WebP photo').replace(/\.$/, '')}.`;
    default:
      return `The server could not process this photo (${response.status}${detail ? `: ${detail}` : ''}).`;
  }
}

async function showCredits() {
  const key = keyInput.value.trim();
  if (!key) return showCreditsError('Enter an API key first.');
  let response;
  try {
    response = await fetch('/v1.0/account', { headers: { 'X-API-Key': key } });
  } catch {
    return showCreditsError('The server could not be reached.');
  }
  if (!response.ok) return showCreditsError(await explainError(response));
  const { credits } = (await response.json()).data.attributes;
  creditsLine.className = 'credits';
  creditsLine.textContent = `Credits left: ${credits.total}`;
}

function showCreditsError(text) {
  creditsLine.className = 'credits error';
  creditsLine.textContent = text;
}
