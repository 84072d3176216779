// The IFDs of a TIFF-structured camera RAW (DNG, CR2, NEF, ARW, ORF, RW2, PEF …), read where they lie: every IFD of
// the chain from the header, their SubIFDs (330) and the Exif IFD, each entry with where its value starts. Offsets
// are checked against the data, loops and runaway counts are cut off: a RAW is read before anything trusts it.

/** One IFD's entries by tag: the type, the count and where the value's bytes start. */
export type Ifd = Map<number, { type: number; count: number; at: number }>;

const TYPE_SIZE: Record<number, number> = {
  1: 1,
  2: 1,
  3: 2,
  4: 4,
  5: 8,
  6: 1,
  7: 1,
  8: 2,
  9: 4,
  10: 8,
  11: 4,
  12: 8,
  13: 4,
};
/** TIFF's 42; Olympus's "RO"/"RS" and Panasonic's 0x55 in its place (ORF, RW2), which are TIFF otherwise. */
const MAGICS = new Set([42, 0x4f52, 0x5352, 0x55]);
const SUB_IFDS = 330;
const EXIF_IFD = 0x8769;
/** More IFDs than any camera writes: a file that claims more is not walked further. */
const MAX_IFDS = 64;

export class TiffIfds {
  readonly little: boolean;
  /** The IFDs in the order met: the chain from the header first (IFD0 is `all[0]`), sub-IFDs after their parent. */
  readonly all: Ifd[] = [];

  /** `base`: where the TIFF header lies in `data` (0 for a TIFF RAW; inside a box for CR3's CMT1). */
  constructor(
    private readonly data: Buffer,
    private readonly base = 0,
  ) {
    const order = data.toString('latin1', base, base + 2);
    if ((order !== 'II' && order !== 'MM') || data.length < base + 8) throw new Error('not a TIFF header');
    this.little = order === 'II';
    if (!MAGICS.has(this.u16(2))) throw new Error('not a TIFF header');
    const visited = new Set<number>();
    const walk = (offset: number): void => {
      while (offset > 0 && !visited.has(offset) && this.all.length < MAX_IFDS) {
        visited.add(offset);
        const ifd = this.read(offset);
        if (!ifd) return;
        this.all.push(ifd);
        for (const tag of [SUB_IFDS, EXIF_IFD]) for (const sub of this.numbers(ifd, tag)) walk(sub);
        const count = this.u16(offset);
        offset = this.inside(offset + 2 + count * 12, 4) ? this.u32(offset + 2 + count * 12) : 0;
      }
    };
    walk(this.u32(4));
  }

  u16(at: number): number {
    return this.little ? this.data.readUInt16LE(this.base + at) : this.data.readUInt16BE(this.base + at);
  }

  u32(at: number): number {
    return this.little ? this.data.readUInt32LE(this.base + at) : this.data.readUInt32BE(this.base + at);
  }

  /** Whether `length` bytes at the TIFF offset `at` lie inside the data. */
  inside(at: number, length: number): boolean {
    return at >= 0 && length >= 0 && this.base + at + length <= this.data.length;
  }

  /** The bytes at TIFF offset `at`, or undefined when they run past the data. */
  bytes(at: number, length: number): Buffer | undefined {
    return this.inside(at, length) ? this.data.subarray(this.base + at, this.base + at + length) : undefined;
  }

  private read(offset: number): Ifd | undefined {
    if (!this.inside(offset, 2)) return undefined;
    const count = this.u16(offset);
    if (!this.inside(offset + 2, count * 12)) return undefined;
    const ifd: Ifd = new Map();
    for (let i = 0; i < count; i++) {
      const entry = offset + 2 + i * 12;
      const type = this.u16(entry + 2);
      const n = this.u32(entry + 4);
      const size = (TYPE_SIZE[type] ?? 0) * n;
      if (size === 0) continue;
      const at = size <= 4 ? entry + 8 : this.u32(entry + 8);
      if (this.inside(at, size)) ifd.set(this.u16(entry), { type, count: n, at });
    }
    return ifd;
  }

  /** A SHORT or LONG entry's numbers (at most 64); [] when absent or of another type. */
  numbers(ifd: Ifd, tag: number): number[] {
    const entry = ifd.get(tag);
    if (!entry || (entry.type !== 3 && entry.type !== 4 && entry.type !== 13)) return [];
    const width = entry.type === 3 ? 2 : 4;
    return Array.from({ length: Math.min(entry.count, 64) }, (_, i) =>
      width === 2 ? this.u16(entry.at + i * 2) : this.u32(entry.at + i * 4),
    );
  }

  /** The first number of a SHORT or LONG entry. */
  number(ifd: Ifd, tag: number): number | undefined {
    return this.numbers(ifd, tag)[0];
  }

  /** An ASCII entry's text, without its trailing NULs. */
  text(ifd: Ifd, tag: number): string | undefined {
    const entry = ifd.get(tag);
    if (entry?.type !== 2) return undefined;
    return this.data
      .toString('latin1', this.base + entry.at, this.base + entry.at + Math.min(entry.count, 256))
      .replace(/\0+$/, '');
  }
}
