// A pixel worker's thread (pixel-workers.ts): runs each job as the main thread would, its result's arrays moved back.

import { parentPort } from 'node:worker_threads';
import { runPixelJob, type PixelJobInput, type PixelJobName } from './pixel-jobs.js';
import type { PixelReply } from './pixel-workers.js';
import { sendStdoutToStderr } from './worker-stdout.js';
import { movableBuffers } from '../../platform/thread-transfer.js';

if (!parentPort) throw new Error('pixel-worker-entry runs only as a worker thread');
sendStdoutToStderr();
const port = parentPort;
port.on(
  'message',
  <Name extends PixelJobName>({ id, name, input }: { id: number; name: Name; input: PixelJobInput<Name> }) => {
    runPixelJob(name, input).then(
      // Every array a job returns was allocated here (or arrived in its message): all of them move.
      (result) => port.postMessage({ id, result } satisfies PixelReply, movableBuffers(result)),
      (error: unknown) =>
        port.postMessage({ id, error: error instanceof Error ? error.message : String(error) } satisfies PixelReply),
    );
  },
);
