// The per-pixel work of each image runs on pixel workers (pixel-workers.ts) to keep the main thread free for the GPU:
// a result must be the very bytes the same jobs make in process, whatever the pixels' place in memory, the format,
// crop, background and alpha, and however many jobs run at once; a cancelled image gets no result.

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_OPTIONS, parseRemoveOptions } from '../../../../src/api/options.js';
import { createEngine } from '../../../../src/engine/index.js';
import type { FinishJob } from '../../../../src/engine/output/pixel-operations.js';
import {
  inProcess,
  type PixelJobName,
  type PixelWork,
  runPixelJob,
} from '../../../../src/engine/runtime/pixel-jobs.js';
import { onPixelWorker, PIXEL_JOB_LIMIT_MS, PIXEL_WORKERS } from '../../../../src/engine/runtime/pixel-workers.js';
import { type ModelRunner, runPipeline } from '../../../../src/engine/pipeline.js';
import type { Engine } from '../../../../src/engine/types.js';
import type { WorkerSession } from '../../../../src/engine/runtime/inference-worker.js';
import { removeTempDirs, tempDir } from '../../../helpers/cli.js';
import { warmKeyModel } from '../../../helpers/fast-models.js';
import { heicFromJpeg } from '../../../helpers/photo-formats.js';
import { seededRandom } from '../../../helpers/seeded-random.js';

const SAMPLES = path.join(import.meta.dirname, '..', '..', '..', '..', 'samples');

function randomFinishJob(seed: number, width: number, height: number, channels: 3 | 4): FinishJob {
  const next = seededRandom(seed);
  const byte = () => {
    const r = next();
    return r < 0.3 ? 0 : r < 0.6 ? 255 : Math.floor(next() * 256);
  };
  // The pixels sit at an odd offset inside a larger buffer, as a subarray of sharp's output may.
  const backing = Buffer.from(Array.from({ length: width * height * channels + 3 }, byte));
  const pixels = backing.subarray(3);
  const mask = Buffer.from(Array.from({ length: width * height }, byte));
  const background = seed % 3 === 0 ? { r: 10, g: 200, b: 30, alpha: 0.5 } : undefined;
  const format = (['png', 'auto', 'webp', 'jpg'] as const)[seed % 4] ?? 'png';
  return { pixels, channels, width, height, mask: { data: mask, width, height }, findBounds: true, format, background };
}

/** A job's output as comparable values: each array as its bytes' sha256 (a Buffer and a Uint8Array alike). */
function digestOf(output: object): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(output).map(([key, value]: [string, unknown]) => [
      key,
      ArrayBuffer.isView(value)
        ? createHash('sha256')
            .update(new Uint8Array(value.buffer, value.byteOffset, value.byteLength))
            .digest('hex')
        : value,
    ]),
  );
}

describe('onPixelWorker', () => {
  afterAll(removeTempDirs);

  it('fails a job still running at the time limit (processing_failed) and stops its worker; the next job runs', async () => {
    const work = tempDir();
    const jpeg = await sharp({ create: { width: 4000, height: 3000, channels: 3, background: '#88aacc' } })
      .jpeg()
      .toBuffer();
    const heic = new Uint8Array(heicFromJpeg(jpeg, work, 'big'));
    // The clock of the limit moved on while the decode (about 1.5 s of WebAssembly) is really running.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let decoding: Promise<unknown>;
    try {
      decoding = onPixelWorker('heic', { heic, width: 4000, height: 3000 });
      vi.advanceTimersByTime(PIXEL_JOB_LIMIT_MS);
    } finally {
      vi.useRealTimers();
    }
    // (the outcome, not the 48 MB of pixels a finished decode would give)
    const outcome = await decoding.then(
      () => 'finished',
      (error: { code: string; message: string }) => ({ code: error.code, message: error.message }),
    );
    expect(outcome).toEqual({
      code: 'processing_failed',
      message: `the image's pixel work (heic) ran over ${PIXEL_JOB_LIMIT_MS / 1000} s; its worker was stopped`,
    });
    const job = randomFinishJob(7, 30, 20, 4);
    expect(digestOf(await onPixelWorker('finish', job))).toEqual(digestOf(await runPixelJob('finish', job)));
  });

  it('finishes a result as in process: PNG, JPG and WebP, RGB and RGBA, with and without a background', async () => {
    for (const [seed, channels] of [
      [1, 3],
      [2, 4],
      [3, 4],
      [4, 3],
      [6, 4],
    ] as const) {
      const job = randomFinishJob(seed, 613, 1409, channels); // several bands of 2 MB
      const [onWorker, here] = await Promise.all([onPixelWorker('finish', job), runPixelJob('finish', job)]);
      expect(digestOf(onWorker), `seed ${seed}`).toEqual(digestOf(here));
      if ('png' in onWorker) {
        const decoded = await sharp(onWorker.png).metadata();
        expect([decoded.width, decoded.height, decoded.channels]).toEqual([613, 1409, 4]);
      }
    }
  });

  it('gives each of many jobs at once its own result', async () => {
    const jobs = Array.from({ length: PIXEL_WORKERS * 3 + 1 }, (_, i) => randomFinishJob(100 + i, 20 + i, 30, 4));
    const results = await Promise.all(jobs.map((job) => onPixelWorker('finish', job)));
    for (const [i, job] of jobs.entries())
      expect(digestOf(results[i] ?? {})).toEqual(digestOf(await inProcess('finish', job)));
  });

  it('moves the buffers it is given: the sender keeps none of them', async () => {
    const plane = new Float32Array(64 * 48).fill(0.5);
    const result = await onPixelWorker('mask', { data: plane, width: 64, height: 48, findBounds: true }, [
      plane.buffer,
    ]);
    expect(plane.byteLength).toBe(0); // detached here: moved, not copied
    expect([result.mask.length, result.mask[0], result.bounds]).toEqual([
      64 * 48,
      128,
      { left: 0, top: 0, right: 63, bottom: 47 },
    ]);
  });

  it("rejects a job with its error's message", async () => {
    const mask = { data: new Uint8Array(100 * 80), width: 100, height: 80, findBounds: false };
    await expect(onPixelWorker('mask', { ...mask, to: { width: 50, height: 200 } })).rejects.toThrow(
      'upsampleMask only upsizes (100×80 → 50×200)',
    );
  });
});

describe('runPipeline on pixel workers', () => {
  let engine: Engine & { session: WorkerSession };
  const photos: Record<string, Buffer> = {};
  beforeAll(async () => {
    engine = await createEngine({ model: warmKeyModel() });
    for (const name of ['chelsea.png', 'rocket.jpg']) photos[name] = await readFile(path.join(SAMPLES, name));
    // Larger than the model's 1024² on both sides, so the mask is upsized on the worker (the samples shrink it).
    photos['rocket 2400×1600'] = await sharp(photos['rocket.jpg'])
      .resize(2400, 1600, { fit: 'fill' })
      .jpeg()
      .toBuffer();
    // An RGBA photo whose own alpha counts in the result.
    const { data, info } = await sharp(photos['chelsea.png'])
      .resize(1300, 1100, { fit: 'fill' })
      .raw()
      .toBuffer({ resolveWithObject: true });
    const alpha = await sharp(data, { raw: info }).greyscale().raw().toBuffer();
    photos['chelsea with alpha'] = await sharp(data, { raw: info })
      .joinChannel(alpha, { raw: { ...info, channels: 1 } })
      .png()
      .toBuffer();
  });
  afterAll(async () => {
    await engine?.close();
  });

  const every: Record<string, string | undefined>[] = [
    ...['auto', 'png', 'jpg', 'webp'].flatMap((format) => [{ format }, { format, crop: 'true' }]),
    { size: 'preview' },
    { size: 'preview', crop: 'true', format: 'webp' },
    { bg_color: '81d4fa' },
    { bg_color: '#00ff0080', crop: 'true' },
  ];
  // Every case on the photo whose mask is upsized on the worker; a few on those whose mask sharp shrinks (each
  // result a whole pipeline twice: the suite's time).
  const few: Record<string, string | undefined>[] = [
    { format: 'auto' },
    { format: 'jpg', crop: 'true' },
    { size: 'preview', bg_color: '#00ff0080' },
  ];
  const casesOf: Record<string, Record<string, string | undefined>[]> = {
    'rocket 2400×1600': every,
    'chelsea.png': few,
    'rocket.jpg': few,
    'chelsea with alpha': [{ format: 'auto' }, { format: 'webp', crop: 'true' }, { bg_color: '#00ff0080' }],
  };

  it.each(Object.keys(casesOf))(
    '%s: the bytes, size, format and box the same jobs make in process, across formats, crop and background',
    async (name) => {
      for (const fields of casesOf[name] ?? []) {
        const options = parseRemoveOptions(fields, DEFAULT_OPTIONS);
        const input = photos[name] as Buffer;
        const onWorkers = await runPipeline(engine.session, input, options);
        const here = await runPipeline(engine.session, input, options, undefined, inProcess);
        const { timings: _w, ...worker } = onWorkers;
        const { timings: _h, ...main } = here;
        expect(worker.data.equals(main.data), `${name} ${JSON.stringify(fields)}`).toBe(true);
        expect(worker).toEqual(main);
      }
    },
  );

  it('a cancelled image gets no result, wherever the cancel lands', async () => {
    const input = photos['rocket.jpg'] as Buffer;
    for (const job of ['tensor', 'mask', 'finish'] satisfies PixelJobName[]) {
      const controller = new AbortController();
      const runs: string[] = [];
      const runner: ModelRunner = {
        model: engine.session.model,
        inputSize: engine.session.inputSize,
        run: (tensor) => {
          runs.push('run');
          return engine.session.run(tensor);
        },
      };
      // Cancelled as the job is handed to its worker: it finishes there, but the image stops at the next step.
      const cancelling: PixelWork = (name, jobInput, transfer) => {
        if (name === job) controller.abort();
        return onPixelWorker(name, jobInput, transfer);
      };
      const crop = job === 'mask' ? 'true' : 'false';
      const result = runPipeline(
        runner,
        input,
        parseRemoveOptions({ crop }, DEFAULT_OPTIONS),
        controller.signal,
        cancelling,
      );
      await expect(result, job).rejects.toMatchObject({ code: 'interrupted', message: 'processing was cancelled' });
      expect(runs, job).toEqual(job === 'tensor' ? [] : ['run']);
    }
  });
});
