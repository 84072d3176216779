// The PNG worker's thread (png-workers.ts): composes a result's pixels and encodes them as the main thread did.

import { parentPort } from 'node:worker_threads';
import { composeAndEncodePng, type PngJob } from './png-job.js';

if (!parentPort) throw new Error('png-worker-entry runs only as a worker thread');
const port = parentPort;
port.on('message', (job: PngJob & { id: number }) => {
  composeAndEncodePng(job).then(
    (png) => port.postMessage({ id: job.id, png }),
    (error: unknown) => port.postMessage({ id: job.id, error: error instanceof Error ? error.message : String(error) }),
  );
});
