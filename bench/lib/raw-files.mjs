// Camera RAW files made by the suite, laid out as the public descriptions of each kind say (Adobe's DNG 1.4
// specification; the CR2, NEF and ARW pages of Phil Harvey's ExifTool tag documentation and LibRaw's sources): a TIFF
// structure holding a real JPEG preview (made with sharp), a small thumbnail and a real Bayer (RGGB) mosaic of the
// same picture, 16 bits per sample, uncompressed. LibRaw's own tools (`raw-identify`, `dcraw_emu`, Debian's
// libraw-bin) read each of them, so they are not only rmbg's idea of a RAW.
import sharp from 'sharp';
/** TIFF field types used here. */
const BYTE = 1;
const ASCII = 2;
const SHORT = 3;
const LONG = 4;
const RATIONAL = 5;
const UNDEFINED = 7;
const SRATIONAL = 10;
const TYPE_SIZE = { 1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 7: 1, 10: 8 };
/** A TIFF-structured file: IFDs written as they are met, each one's out-of-line values and data after it. */
class TiffWriter {
  little;
  chunks = [];
  length = 0;
  constructor(little) {
    this.little = little;
  }
  append(bytes) {
    if (this.length & 1) {
      this.chunks.push(Buffer.alloc(1)); // values and IFDs start on a word boundary
      this.length++;
    }
    const at = this.length;
    this.chunks.push(bytes);
    this.length += bytes.length;
    return at;
  }
  u16(n) {
    const b = Buffer.alloc(2);
    this.little ? b.writeUInt16LE(n) : b.writeUInt16BE(n);
    return b;
  }
  u32(n) {
    const b = Buffer.alloc(4);
    this.little ? b.writeUInt32LE(n >>> 0) : b.writeUInt32BE(n >>> 0);
    return b;
  }
  encode(type, value) {
    if (Buffer.isBuffer(value)) return value;
    if (typeof value === 'string') return Buffer.from(`${value}\0`, 'latin1');
    if (type === SHORT) return Buffer.concat(value.map((n) => this.u16(n)));
    if (type === BYTE || type === UNDEFINED) return Buffer.from(value);
    return Buffer.concat(value.map((n) => this.u32(n))); // LONG, RATIONAL and SRATIONAL pairs
  }
  /** The header: byte order, 42, the first IFD's offset; `extra` follows (CR2's "CR" marker and raw IFD offset). */
  header(extra = Buffer.alloc(0)) {
    const order = Buffer.from(this.little ? 'II' : 'MM', 'latin1');
    const start = Buffer.concat([order, this.u16(42), this.u32(8 + extra.length), extra]);
    this.append(start);
    return { patch: (at, value) => this.u32(value).copy(start, at) };
  }
  /** Writes `ifd`, its values, data and sub-IFDs, then its next IFD; returns its offset. */
  ifd(ifd) {
    const fields = [...ifd.fields].sort((a, b) => a.tag - b.tag);
    const table = Buffer.alloc(2 + fields.length * 12 + 4);
    const at = this.append(table);
    this.u16(fields.length).copy(table, 0);
    fields.forEach((field, i) => {
      const entry = 2 + i * 12;
      let bytes;
      let count;
      if (field.data) {
        bytes = this.u32(this.append(field.data));
        count = 1;
      } else if (field.ifds) {
        const offsets = field.ifds.map((sub) => this.ifd(sub));
        bytes = Buffer.concat(offsets.map((offset) => this.u32(offset)));
        count = offsets.length;
      } else {
        bytes = this.encode(field.type, field.value);
        const size = TYPE_SIZE[field.type];
        count = bytes.length / size;
      }
      this.u16(field.tag).copy(table, entry);
      this.u16(field.data || field.ifds ? LONG : field.type).copy(table, entry + 2);
      this.u32(count).copy(table, entry + 4);
      (bytes.length <= 4 ? bytes : this.u32(this.append(bytes))).copy(table, entry + 8);
    });
    if (ifd.next) this.u32(this.ifd(ifd.next)).copy(table, table.length - 4);
    return at;
  }
  bytes() {
    return Buffer.concat(this.chunks);
  }
}
/** Upright picture: blue-grey, a warm red square in the top-left corner (the warm-key model's foreground). */
export const RAW_UPRIGHT = { background: { r: 90, g: 110, b: 140 }, marker: { r: 255, g: 0, b: 0 } };
/** The picture stored for `orientation` (1 or 6): upright `uprightWidth` × `uprightHeight`, the marker top-left. */
export async function rawPicture(orientation, uprightWidth = 64, uprightHeight = 96) {
  const size = Math.round(Math.min(uprightWidth, uprightHeight) / 3);
  const marker = await sharp({ create: { width: size, height: size, channels: 3, background: RAW_UPRIGHT.marker } })
    .png()
    .toBuffer();
  const upright = await sharp({
    create: { width: uprightWidth, height: uprightHeight, channels: 3, background: RAW_UPRIGHT.background },
  })
    .composite([{ input: marker, left: 0, top: 0 }])
    .png()
    .toBuffer();
  // Orientation 6: a viewer turns the stored picture 90° clockwise, so it is stored turned 90° anticlockwise.
  const stored = sharp(upright).rotate(orientation === 6 ? 270 : 0);
  const { data: rgb, info } = await stored.clone().removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const preview = await sharp(rgb, { raw: info }).jpeg({ quality: 95 }).toBuffer();
  const thumbnailSize = { width: Math.round(info.width / 4), height: Math.round(info.height / 4) };
  const small = sharp(rgb, { raw: info }).resize(thumbnailSize.width, thumbnailSize.height);
  return {
    width: info.width,
    height: info.height,
    orientation,
    rgb,
    preview,
    thumbnail: await small.clone().jpeg({ quality: 80 }).toBuffer(),
    thumbnailRgb: await small.raw().toBuffer(),
    thumbnailSize,
  };
}
/** The RGGB mosaic of the picture, 12-bit values (white at 4095) in 16-bit samples of the file's byte order. */
function bayerMosaic(picture, little) {
  const { width, height, rgb } = picture;
  const out = Buffer.alloc(width * height * 2);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const channel = (y & 1) === 0 ? ((x & 1) === 0 ? 0 : 1) : (x & 1) === 0 ? 1 : 2;
      const linear = (rgb[(y * width + x) * 3 + channel] / 255) ** 2.2; // sRGB-ish gamma undone
      const value = Math.round(linear * 3000); // under the white level (4095): no channel clips
      little ? out.writeUInt16LE(value, (y * width + x) * 2) : out.writeUInt16BE(value, (y * width + x) * 2);
    }
  }
  return out;
}
const rational = (...values) => values.flatMap((v) => [Math.round(v * 10000), 10000]);
const signedRational = (...values) => rational(...values).map((n) => n >>> 0);
/** EXIF of every fixture: authorship and dates, which --keep-metadata keeps. */
export const RAW_EXIF = { artist: 'Ada Photographer', copyright: '(c) Ada', taken: '2026:05:04 10:11:12' };
function exifFields() {
  return [
    { tag: 0x013b, type: ASCII, value: RAW_EXIF.artist },
    { tag: 0x8298, type: ASCII, value: RAW_EXIF.copyright },
    { tag: 0x8769, type: LONG, ifds: [{ fields: [{ tag: 0x9003, type: ASCII, value: RAW_EXIF.taken }] }] },
  ];
}
function camera(make, model, orientation) {
  return [
    { tag: 0x010f, type: ASCII, value: make },
    { tag: 0x0110, type: ASCII, value: model },
    { tag: 0x0112, type: SHORT, value: [orientation] },
    ...exifFields(),
  ];
}
/** The CFA image's fields: size, 16-bit samples, no compression, one strip, the RGGB pattern. */
function cfaFields(picture, little, newSubfileType) {
  const mosaic = bayerMosaic(picture, little);
  return [
    ...(newSubfileType ? [{ tag: 0x00fe, type: LONG, value: [0] }] : []),
    { tag: 0x0100, type: LONG, value: [picture.width] },
    { tag: 0x0101, type: LONG, value: [picture.height] },
    { tag: 0x0102, type: SHORT, value: [16] },
    { tag: 0x0103, type: SHORT, value: [1] },
    { tag: 0x0106, type: SHORT, value: [32803] }, // Color Filter Array
    { tag: 0x0111, type: LONG, data: mosaic },
    { tag: 0x0115, type: SHORT, value: [1] },
    { tag: 0x0116, type: LONG, value: [picture.height] },
    { tag: 0x0117, type: LONG, value: [mosaic.length] },
    { tag: 0x011c, type: SHORT, value: [1] },
    { tag: 0x828d, type: SHORT, value: [2, 2] }, // CFARepeatPatternDim
    { tag: 0x828e, type: BYTE, value: [0, 1, 1, 2] }, // CFAPattern: R G / G B
  ];
}
/** An uncompressed 8-bit RGB strip (the thumbnail of DNG's and NEF's IFD0, CR2's IFD2). */
function rgbStripFields(pixels, size) {
  return [
    { tag: 0x0100, type: LONG, value: [size.width] },
    { tag: 0x0101, type: LONG, value: [size.height] },
    { tag: 0x0102, type: SHORT, value: [8, 8, 8] },
    { tag: 0x0103, type: SHORT, value: [1] },
    { tag: 0x0106, type: SHORT, value: [2] },
    { tag: 0x0111, type: LONG, data: pixels },
    { tag: 0x0115, type: SHORT, value: [3] },
    { tag: 0x0116, type: LONG, value: [size.height] },
    { tag: 0x0117, type: LONG, value: [pixels.length] },
  ];
}
/** A JPEG in a strip (compression 6 or 7): DNG's preview IFD, CR2's IFD0. */
function jpegStripFields(jpeg, size, compression) {
  return [
    { tag: 0x0100, type: LONG, value: [size.width] },
    { tag: 0x0101, type: LONG, value: [size.height] },
    { tag: 0x0102, type: SHORT, value: [8, 8, 8] },
    { tag: 0x0103, type: SHORT, value: [compression] },
    { tag: 0x0106, type: SHORT, value: [6] }, // YCbCr
    { tag: 0x0111, type: LONG, data: jpeg },
    { tag: 0x0115, type: SHORT, value: [3] },
    { tag: 0x0116, type: LONG, value: [size.height] },
    { tag: 0x0117, type: LONG, value: [jpeg.length] },
  ];
}
/** A JPEG by JPEGInterchangeFormat (513/514): NEF's preview sub-IFD, ARW's IFD0, CR2's IFD1. */
function jpegInterchangeFields(jpeg) {
  return [
    { tag: 0x0103, type: SHORT, value: [6] },
    { tag: 0x0201, type: LONG, data: jpeg },
    { tag: 0x0202, type: LONG, value: [jpeg.length] },
  ];
}
/** DNG 1.4: IFD0 the thumbnail and the DNG tags, SubIFDs the CFA image (NewSubFileType 0) and the full-size
 * preview (NewSubFileType 1, compression 7). */
export function dngFile(picture) {
  const writer = new TiffWriter(true);
  writer.header();
  const size = { width: picture.width, height: picture.height };
  const cfa = {
    fields: [...cfaFields(picture, true, true), { tag: 0xc61d, type: LONG, value: [4095] }], // WhiteLevel
  };
  const preview = {
    fields: [{ tag: 0x00fe, type: LONG, value: [1] }, ...jpegStripFields(picture.preview, size, 7)],
  };
  writer.ifd({
    fields: [
      { tag: 0x00fe, type: LONG, value: [1] },
      ...rgbStripFields(picture.thumbnailRgb, picture.thumbnailSize),
      ...camera('Canon', 'Canon EOS 5D Mark IV', picture.orientation),
      { tag: 0x014a, type: LONG, ifds: [cfa, preview] },
      { tag: 0xc612, type: BYTE, value: [1, 4, 0, 0] }, // DNGVersion
      { tag: 0xc613, type: BYTE, value: [1, 1, 0, 0] }, // DNGBackwardVersion
      { tag: 0xc614, type: ASCII, value: 'rmbg test camera' }, // UniqueCameraModel
      // ColorMatrix1: XYZ (D65) to camera, here sRGB's primaries: the camera "sees" sRGB.
      {
        tag: 0xc621,
        type: SRATIONAL,
        value: signedRational(3.2406, -1.5372, -0.4986, -0.9689, 1.8758, 0.0415, 0.0557, -0.204, 1.057),
      },
      { tag: 0xc65a, type: SHORT, value: [21] }, // CalibrationIlluminant1: D65
      { tag: 0xc628, type: RATIONAL, value: rational(1, 1, 1) }, // AsShotNeutral
    ],
  });
  return writer.bytes();
}
/** CR2: "CR", version 2 and the raw IFD's offset after the TIFF header; IFD0 the full-size JPEG (compression 6,
 * strips), IFD1 a small JPEG, IFD2 a small RGB image, IFD3 the raw image. */
export function cr2File(picture) {
  const writer = new TiffWriter(true);
  const header = writer.header(Buffer.from([0x43, 0x52, 0x02, 0x00, 0, 0, 0, 0])); // "CR" 2.0, raw IFD offset
  const size = { width: picture.width, height: picture.height };
  const raw = { fields: cfaFields(picture, true, false) };
  const small = { fields: rgbStripFields(picture.thumbnailRgb, picture.thumbnailSize), next: raw };
  const thumbnail = { fields: jpegInterchangeFields(picture.thumbnail), next: small };
  writer.ifd({
    fields: [
      ...jpegStripFields(picture.preview, size, 6),
      ...camera('Canon', 'Canon EOS 5D Mark IV', picture.orientation),
    ],
    next: thumbnail,
  });
  const bytes = writer.bytes();
  header.patch(12, findIfdWithMosaic(bytes, picture)); // the raw IFD's offset, as CR2 readers look for it
  return writer.bytes();
}
/** The offset of the IFD whose width is the picture's and whose photometric is CFA (CR2's IFD3), found by walking. */
function findIfdWithMosaic(tiff, picture) {
  for (let at = tiff.readUInt32LE(4); at; ) {
    const count = tiff.readUInt16LE(at);
    const tags = new Map();
    for (let i = 0; i < count; i++) {
      const entry = at + 2 + i * 12;
      const type = tiff.readUInt16LE(entry + 2);
      tags.set(tiff.readUInt16LE(entry), type === SHORT ? tiff.readUInt16LE(entry + 8) : tiff.readUInt32LE(entry + 8));
    }
    if (tags.get(0x0106) === 32803 && tags.get(0x0100) === picture.width) return at;
    at = tiff.readUInt32LE(at + 2 + count * 12);
  }
  throw new Error('cr2File fixture: no raw IFD');
}
/** NEF (big-endian): IFD0 a small RGB thumbnail, SubIFDs the full-size JPEG (513/514) and the CFA image. */
export function nefFile(picture) {
  const writer = new TiffWriter(false);
  writer.header();
  const preview = { fields: [{ tag: 0x00fe, type: LONG, value: [1] }, ...jpegInterchangeFields(picture.preview)] };
  const cfa = { fields: cfaFields(picture, false, true) };
  writer.ifd({
    fields: [
      { tag: 0x00fe, type: LONG, value: [1] },
      ...rgbStripFields(picture.thumbnailRgb, picture.thumbnailSize),
      ...camera('NIKON CORPORATION', 'NIKON D850', picture.orientation),
      { tag: 0x014a, type: LONG, ifds: [preview, cfa] },
    ],
  });
  return writer.bytes();
}
/** ARW: IFD0 the camera's JPEG by 513/514, which on Sony bodies is smaller than the sensor (1616 px wide on a 42 MP
 * one; here a quarter-size `preview`), SubIFDs the CFA image; IFD1 the thumbnail. */
export function arwFile(picture, preview) {
  const writer = new TiffWriter(true);
  writer.header();
  writer.ifd({
    fields: [
      ...jpegInterchangeFields(preview),
      ...camera('SONY', 'ILCE-7RM3', picture.orientation),
      { tag: 0x014a, type: LONG, ifds: [{ fields: cfaFields(picture, true, true) }] },
    ],
    next: { fields: jpegInterchangeFields(picture.thumbnail) },
  });
  return writer.bytes();
}
/** Every fixture RAW of `picture`, by file name. */
export async function rawFiles(picture, stem = 'IMG') {
  const smallPreview = await sharp(picture.preview)
    .resize(Math.round(picture.width / 2), Math.round(picture.height / 2))
    .jpeg()
    .toBuffer();
  return {
    [`${stem}_DNG.dng`]: dngFile(picture),
    [`${stem}_CR2.CR2`]: cr2File(picture),
    [`${stem}_NEF.NEF`]: nefFile(picture),
    [`${stem}_ARW.ARW`]: arwFile(picture, smallPreview),
  };
}
