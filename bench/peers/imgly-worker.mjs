// The peer, @imgly/background-removal-node, in its own process (it brings onnxruntime-node 1.17, which must not
// share a process with rmbg's 1.30). Driven over IPC by bench/run.mjs: {file} → {ms, bytes}; {files} → {ms}.
// Offline: its weights are read from its own package's dist/ through a file:// publicPath.
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// Its package.json is not in its exports map: find the package from its resolved entry (dist/index.mjs).
const pkgDir = join(dirname(fileURLToPath(import.meta.resolve('@imgly/background-removal-node'))), '..');
const { version } = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const { removeBackground } = await import('@imgly/background-removal-node');
const config = {
  publicPath: `${pathToFileURL(`${pkgDir}/dist`).href}/`,
  model: 'medium',
  output: { format: 'image/png', quality: 0.8 },
};
const MIME = { '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.png': 'image/png', '.webp': 'image/webp' };

async function removeOne(file) {
  const bytes = await readFile(file);
  const started = performance.now();
  // A typed Blob: from an untyped Buffer the peer cannot tell the format and throws "Unsupported format".
  const blob = await removeBackground(new Blob([bytes], { type: MIME[extname(file).toLowerCase()] }), config);
  const out = Buffer.from(await blob.arrayBuffer());
  return { ms: performance.now() - started, bytes: out.length };
}

process.on('message', async (message) => {
  try {
    if (message.file) process.send({ id: message.id, ...(await removeOne(message.file)) });
    else if (message.files) {
      const started = performance.now();
      for (const file of message.files) await removeOne(file);
      process.send({ id: message.id, ms: performance.now() - started });
    } else if (message.warmup) {
      // First call loads the model (memoised by the peer per config): timed apart from image work.
      const started = performance.now();
      await removeOne(message.warmup);
      process.send({ id: message.id, ms: performance.now() - started, version });
    } else if (message.exit) {
      process.send({ id: message.id, maxRssBytes: process.resourceUsage().maxRSS * 1024 });
      process.disconnect();
    }
  } catch (error) {
    process.send({ id: message.id, error: String(error?.stack ?? error) });
  }
});
process.send({ ready: true });
