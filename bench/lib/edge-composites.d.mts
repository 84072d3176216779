/** RGB bytes and their alpha, one byte per pixel. */
export interface Cutout {
  pixels: Uint8Array;
  alpha: Uint8Array;
}
export function compositeOver(
  foreground: Cutout & { width: number; height: number },
  backgroundFile: string,
  flop?: boolean,
): Promise<Buffer>;
export function edgeError(truth: Cutout, cutout: Cutout, over?: number[][]): { levels: number; band: number };
export function splitRgba(rgba: Uint8Array): { pixels: Buffer; alpha: Buffer };
