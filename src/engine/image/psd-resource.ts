// One block of a PSD's image resources section (Adobe's file format: "Image Resource Blocks"): the ICC profile the
// layered PSD carries (engine/output/psd-encode.ts) and the EXIF --keep-metadata adds (embed-exif.ts).

/** Resource ids of Adobe's table that rmbg writes. */
export const PSD_RESOURCE = { iccProfile: 1039, exif: 1058 } as const;

/** '8BIM', the id, an empty Pascal name (padded to even), the size and the data (padded to even). */
export function psdResource(id: number, data: Buffer): Buffer {
  const head = Buffer.alloc(12);
  head.write('8BIM', 0, 'latin1');
  head.writeUInt16BE(id, 4);
  // bytes 6-7: the empty name and its pad
  head.writeUInt32BE(data.length, 8);
  return Buffer.concat([head, data, Buffer.alloc(data.length % 2)]);
}
