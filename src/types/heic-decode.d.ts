declare module 'heic-decode' {
  interface DecodedImage {
    width: number;
    height: number;
    /** RGBA, 8 bits per channel. */
    data: Uint8ClampedArray;
  }
  interface ImageHandle {
    width: number;
    height: number;
    decode(): Promise<DecodedImage>;
  }
  interface Decode {
    (input: { buffer: Uint8Array }): Promise<DecodedImage>;
    /** Every top-level image, undecoded (their sizes are read from the container); dispose() frees them. */
    all(input: { buffer: Uint8Array }): Promise<ImageHandle[] & { dispose(): void }>;
  }
  const decode: Decode;
  export default decode;
}
