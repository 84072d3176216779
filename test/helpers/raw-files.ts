// The suite's camera RAW files (DNG, CR2, NEF, ARW with real JPEG previews and Bayer mosaics): written by
// bench/lib/raw-files.mjs, which the RAW bench (bench/raw-input.mjs) makes its large RAWs with too.
export * from '../../bench/lib/raw-files.mjs';
