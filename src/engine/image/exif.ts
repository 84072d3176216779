// The EXIF a result keeps: who made it and when, GPS only when asked; never serials, maker notes or orientation.

const IFD0_KEPT = new Set([0x013b /* Artist */, 0x8298 /* Copyright */, 0x0132 /* DateTime */]);
const EXIF_KEPT = new Set([
  0x9003 /* DateTimeOriginal */, 0x9004 /* DateTimeDigitized */, 0x9010, 0x9011, 0x9012 /* OffsetTime* */,
]);
const EXIF_IFD = 0x8769;
const GPS_IFD = 0x8825;

/** Bytes per value of each TIFF type, 1 (BYTE) to 12 (DOUBLE). */
const TYPE_SIZE: Record<number, number> = { 1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8 };
/** Width of the numbers a value is made of, for byte-order conversion (a RATIONAL is two LONGs). */
const WORD_SIZE: Record<number, number> = { 1: 1, 2: 1, 3: 2, 4: 4, 5: 4, 6: 1, 7: 1, 8: 2, 9: 4, 10: 4, 11: 4, 12: 8 };

export interface Entry {
  tag: number;
  type: number;
  count: number;
  /** The value's bytes, little-endian. */
  value: Buffer;
}

export interface KeptExif {
  ifd0: Entry[];
  exif: Entry[];
  gps: Entry[];
}

class TiffReader {
  private readonly little: boolean;
  constructor(private readonly tiff: Buffer) {
    const order = tiff.toString('latin1', 0, 2);
    if (order !== 'II' && order !== 'MM') throw new Error('not a TIFF header');
    this.little = order === 'II';
  }
  u16 = (at: number) => (this.little ? this.tiff.readUInt16LE(at) : this.tiff.readUInt16BE(at));
  u32 = (at: number) => (this.little ? this.tiff.readUInt32LE(at) : this.tiff.readUInt32BE(at));
  get firstIfd(): number {
    return this.u32(4);
  }

  /** The entries of the IFD at `offset`; entries whose value lies outside the data are skipped. */
  entries(offset: number): Entry[] {
    if (offset <= 0 || offset + 2 > this.tiff.length) return [];
    const count = this.u16(offset);
    const entries: Entry[] = [];
    for (let i = 0; i < count; i++) {
      const at = offset + 2 + i * 12;
      if (at + 12 > this.tiff.length) break;
      const tag = this.u16(at);
      const type = this.u16(at + 2);
      const n = this.u32(at + 4);
      const size = TYPE_SIZE[type];
      if (!size || n > 1 << 20) continue;
      const bytes = size * n;
      const start = bytes <= 4 ? at + 8 : this.u32(at + 8);
      if (start + bytes > this.tiff.length) continue;
      entries.push({
        tag,
        type,
        count: n,
        value: this.littleEndian(this.tiff.subarray(start, start + bytes), WORD_SIZE[type] as number),
      });
    }
    return entries;
  }

  private littleEndian(bytes: Buffer, word: number): Buffer {
    const copy = Buffer.from(bytes);
    if (this.little || word === 1) return copy;
    for (let i = 0; i + word <= copy.length; i += word) copy.subarray(i, i + word).reverse();
    return copy;
  }
}

/** What is kept from an EXIF block (with or without the "Exif\0\0" prefix); undefined when nothing is. */
export function pickExif(exif: Buffer | undefined, options: { gps: boolean }): KeptExif | undefined {
  if (!exif || exif.length < 8) return undefined;
  const tiff = exif.toString('latin1', 0, 6) === 'Exif\0\0' ? exif.subarray(6) : exif;
  let reader: TiffReader;
  try {
    reader = new TiffReader(tiff);
  } catch {
    return undefined;
  }
  const ifd0 = reader.entries(reader.firstIfd);
  const pointer = (tag: number) =>
    ifd0.find((e) => e.tag === tag && e.type === 4 && e.count === 1)?.value.readUInt32LE(0);
  const kept: KeptExif = {
    ifd0: ifd0.filter((e) => IFD0_KEPT.has(e.tag)),
    exif: reader.entries(pointer(EXIF_IFD) ?? 0).filter((e) => EXIF_KEPT.has(e.tag)),
    gps: options.gps ? reader.entries(pointer(GPS_IFD) ?? 0) : [],
  };
  return kept.ifd0.length || kept.exif.length || kept.gps.length ? kept : undefined;
}

/** A little-endian TIFF block ("II*\0") holding the kept entries, with Exif and GPS sub-IFDs when they have any. */
export function buildTiff(kept: KeptExif): Buffer {
  const ifdSize = (entries: Entry[]) => 2 + entries.length * 12 + 4;
  const dataSize = (entries: Entry[]) =>
    entries.reduce((sum, e) => sum + (e.value.length > 4 ? e.value.length + (e.value.length & 1) : 0), 0);
  const pointerEntry = (tag: number): Entry => ({ tag, type: 4, count: 1, value: Buffer.alloc(4) });
  const ifd0 = [
    ...kept.ifd0,
    ...(kept.exif.length ? [pointerEntry(EXIF_IFD)] : []),
    ...(kept.gps.length ? [pointerEntry(GPS_IFD)] : []),
  ].sort((a, b) => a.tag - b.tag);
  const blocks = [ifd0, kept.exif, kept.gps].filter((entries, i) => i === 0 || entries.length);
  const offsets: number[] = [];
  let size = 8;
  for (const entries of blocks) {
    offsets.push(size);
    size += ifdSize(entries) + dataSize(entries);
  }
  // Pointers to the sub-IFDs, now that their offsets are known.
  let next = 1;
  for (const tag of [EXIF_IFD, GPS_IFD]) {
    const entry = ifd0.find((e) => e.tag === tag);
    if (entry) entry.value.writeUInt32LE(offsets[next++] as number, 0);
  }
  const out = Buffer.alloc(size);
  out.write('II*\0', 0, 'latin1');
  out.writeUInt32LE(8, 4);
  blocks.forEach((entries, b) => {
    const start = offsets[b] as number;
    let data = start + ifdSize(entries);
    out.writeUInt16LE(entries.length, start);
    entries.forEach((e, i) => {
      const at = start + 2 + i * 12;
      out.writeUInt16LE(e.tag, at);
      out.writeUInt16LE(e.type, at + 2);
      out.writeUInt32LE(e.count, at + 4);
      if (e.value.length <= 4) e.value.copy(out, at + 8);
      else {
        out.writeUInt32LE(data, at + 8);
        e.value.copy(out, data);
        data += e.value.length + (e.value.length & 1);
      }
    });
    out.writeUInt32LE(0, start + 2 + entries.length * 12); // no next IFD (no thumbnail)
  });
  return out;
}
