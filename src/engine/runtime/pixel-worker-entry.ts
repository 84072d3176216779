// A pixel worker's thread (pixel-workers.ts): runs each job as the main thread would, its result's arrays moved back.

import { parentPort } from 'node:worker_threads';
import { runPixelJob, type PixelJobInput, type PixelJobName } from './pixel-jobs.js';
import type { PixelReply, PixelRequest } from './pixel-workers.js';
import { sendStdoutToStderr } from './worker-stdout.js';
import { movableBuffers, viewedBuffers } from '../../platform/thread-transfer.js';

if (!parentPort) throw new Error('pixel-worker-entry runs only as a worker thread');
sendStdoutToStderr();
const port = parentPort;
port.on('message', ({ id, name, input, lent }: PixelRequest) => {
  runPixelJob(name as PixelJobName, input as PixelJobInput<PixelJobName>).then(
    // Every array a job returns was allocated here (or arrived in its message): all of them move, the lent ones
    // too. A lent buffer goes back to the main thread's pool unless the result views it (then it is the result's).
    (result) => {
      const viewed = new Set(viewedBuffers(result));
      const back = lent.filter((buffer) => !viewed.has(buffer));
      const moved = new Set([...movableBuffers(result), ...lent]);
      port.postMessage({ id, result, lent: back } satisfies PixelReply, [...moved]);
    },
    (error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      port.postMessage({ id, error: message, lent } satisfies PixelReply, lent);
    },
  );
});
