// libraw-wasm's emscripten module (dist/libraw.js), which rmbg loads itself on a pixel worker: the package's own
// entry (dist/index.js) starts a browser Worker. Only what engine/raw/raw-develop.ts calls is declared.
declare module 'libraw-wasm/dist/libraw.js' {
  interface LibRawImage {
    width: number;
    height: number;
    colors: number;
    bits: number;
    data: Uint8Array;
  }
  interface LibRawInstance {
    /** Reads and unpacks the RAW with dcraw-style settings; throws (an emscripten exception) when it cannot. */
    open(data: Uint8Array, settings: Record<string, unknown>): void;
    /** Sizes after orientation (`width`, `height`), the stored raw size, the flip. */
    metadata(full: boolean): { width: number; height: number; flip: number };
    /** Demosaics and converts: 8-bit RGB, oriented. */
    imageData(): LibRawImage;
    delete(): void;
  }
  interface LibRawModule {
    LibRaw: new () => LibRawInstance;
  }
  export default function createLibRaw(options: {
    wasmBinary: Uint8Array;
    print?: (text: string) => void;
    printErr?: (text: string) => void;
  }): Promise<LibRawModule>;
}
