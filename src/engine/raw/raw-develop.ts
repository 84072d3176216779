// A real development of a camera RAW: LibRaw compiled to WebAssembly (npm libraw-wasm, its emscripten module and
// .wasm loaded as the package ships them), with the camera's white balance, sRGB output and the RAW's orientation.
// Run as a pixel job (runtime/pixel-jobs.ts) on a worker that ends after it: LibRaw's heap grows to the largest RAW
// developed (about 14 bytes a pixel) and never shrinks, so it goes with the worker.

import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

export interface RawDevelopJob {
  raw: Uint8Array;
  /** The largest image developed: a bigger one is refused from its header, before any pixel is demosaiced. */
  maxPixels: number;
  maxSide: number;
}

/** RGB pixels, oriented; or the size that was too big to develop. */
export type DevelopedRaw =
  | { pixels: Uint8Array; width: number; height: number }
  | { tooBig: { width: number; height: number } };

/** dcraw's -w (the camera's white balance), -o 1 (sRGB), 8 bits, AHD demosaic (LibRaw's default quality, -q 3). */
const DEVELOP_SETTINGS = { useCameraWb: true, outputColor: 1, outputBps: 8, userQual: 3, halfSize: false };

async function libRaw() {
  const { default: createLibRaw } = await import('libraw-wasm/dist/libraw.js');
  const wasm = createRequire(import.meta.url).resolve('libraw-wasm/dist/libraw.wasm');
  // LibRaw prints its warnings; a worker's stdout is the CLI's JSON lines, so they are dropped.
  return createLibRaw({ wasmBinary: await readFile(wasm), print: () => {}, printErr: () => {} });
}

export async function developRaw({ raw, maxPixels, maxSide }: RawDevelopJob): Promise<DevelopedRaw> {
  const { LibRaw } = await libRaw();
  const processor = new LibRaw();
  try {
    try {
      processor.open(raw, DEVELOP_SETTINGS);
    } catch (error) {
      throw new Error(`LibRaw cannot read it (${error instanceof Error ? error.message : 'unsupported or damaged'})`);
    }
    const { width, height } = processor.metadata(false);
    if (width * height > maxPixels || width > maxSide || height > maxSide) return { tooBig: { width, height } };
    let image: ReturnType<typeof processor.imageData>;
    try {
      image = processor.imageData();
    } catch (error) {
      throw new Error(
        `LibRaw cannot develop it (${error instanceof Error ? error.message : 'a compression it cannot decode'})`,
      );
    }
    if (image.colors !== 3 || image.bits !== 8)
      throw new Error(`LibRaw gave ${image.colors} colours of ${image.bits} bits`);
    return { pixels: image.data, width: image.width, height: image.height };
  } finally {
    processor.delete();
  }
}
