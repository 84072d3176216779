// Typed arrays between threads: a message delivers plain typed arrays, and a buffer listed in its transfer list
// moves rather than being copied. Used by the engine's pixel operations, its worker pools and its pipeline.

/**
 * The buffers of `values` (typed arrays, or an object's typed-array fields) that a message may move rather than copy:
 * those a view spans whole. Only for arrays this code allocated or received in a message: a Buffer of sharp's is
 * external memory, which Node copies in a transfer list (20) or refuses there (22): never list one.
 */
export function movableBuffers(...values: unknown[]): ArrayBuffer[] {
  const buffers = viewsOf(values).flatMap((view) =>
    view.buffer instanceof ArrayBuffer && view.byteOffset === 0 && view.byteLength === view.buffer.byteLength
      ? [view.buffer]
      : [],
  );
  return [...new Set(buffers)]; // a buffer listed twice is refused
}

/** Every buffer a typed array of `values` (or of their fields) views, whole or in part. */
export function viewedBuffers(...values: unknown[]): ArrayBufferLike[] {
  return [...new Set(viewsOf(values).map((view) => view.buffer))];
}

/** The typed arrays among `values` and their fields, one level down. */
function viewsOf(values: unknown[]): ArrayBufferView[] {
  return values
    .flatMap((value) =>
      ArrayBuffer.isView(value) ? [value] : typeof value === 'object' && value ? Object.values(value) : [],
    )
    .filter((view): view is ArrayBufferView => ArrayBuffer.isView(view));
}

/** A Buffer over a typed array's bytes, without a copy (a message delivers plain typed arrays, a job's results too). */
export const bufferOf = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
