// The suite's RAW fixtures (test/helpers/raw-files.ts) are RAWs to LibRaw's own tools too (Debian's libraw-bin),
// not only to rmbg; and what rmbg reads of each without developing it: its kind by content, its previews, its
// sensor size and orientation (engine/raw/raw-kind.ts, raw-layout.ts), and LibRaw in WebAssembly developing it.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeRaw } from '../../../../src/engine/raw/decode-raw.js';
import { developRaw } from '../../../../src/engine/raw/raw-develop.js';
import { rawKindOf } from '../../../../src/engine/raw/raw-kind.js';
import { jpegFrameSize, rawLayout } from '../../../../src/engine/raw/raw-layout.js';
import { RAW_UPRIGHT, rawFiles, rawPicture } from '../../../helpers/raw-files.js';

let work: string;
let files: Record<string, Buffer>;
const KIND_OF_FILE: Record<string, string> = {
  'IMG_DNG.dng': 'dng',
  'IMG_CR2.CR2': 'cr2',
  'IMG_NEF.NEF': 'nef',
  'IMG_ARW.ARW': 'arw',
};

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'rmbg-raw-files-'));
  files = await rawFiles(await rawPicture(6));
  for (const [name, data] of Object.entries(files)) writeFileSync(path.join(work, name), data);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The colour at (x, y) of 8-bit RGB pixels `width` wide. */
const at = (pixels: Uint8Array, width: number, x: number, y: number) => [
  ...pixels.subarray((y * width + x) * 3, (y * width + x) * 3 + 3),
];
const isMarker = ([r, g, b]: number[]) => (r as number) > 180 && (g as number) < 80 && (b as number) < 80;

describe.each(Object.keys(KIND_OF_FILE))('%s', (name) => {
  it("LibRaw's raw-identify names the camera and dcraw_emu develops it upright (64x96)", () => {
    const file = path.join(work, name);
    expect(execFileSync('raw-identify', [file], { encoding: 'utf8' })).toMatch(/is a (Canon|Nikon|Sony) .* image/);
    const identified = execFileSync('raw-identify', ['-v', file], { encoding: 'utf8' });
    expect(identified).toMatch(/Image size:\s+96 x 64/);
    expect(identified).toMatch(/Output size:\s+64 x 96/);
    execFileSync('dcraw_emu', ['-T', '-w', file]);
  });

  it('is named by its content, also under another name', () => {
    expect(rawKindOf(files[name] as Buffer)).toBe(KIND_OF_FILE[name]);
  });

  it('LibRaw in WebAssembly develops it upright with the marker top-left', async () => {
    const developed = await developRaw({ raw: files[name] as Buffer, maxPixels: 50_000_000, maxSide: 9999 });
    if ('tooBig' in developed) throw new Error('refused as too big');
    expect([developed.width, developed.height]).toEqual([64, 96]);
    expect(isMarker(at(developed.pixels, 64, 4, 4))).toBe(true);
    expect(isMarker(at(developed.pixels, 64, 60, 90))).toBe(false);
  });
});

describe('developRaw', () => {
  it('refuses a RAW over the pixel ceiling from its header, developing nothing', async () => {
    const raw = files['IMG_DNG.dng'] as Buffer;
    expect(await developRaw({ raw, maxPixels: 64 * 96 - 1, maxSide: 9999 })).toEqual({
      tooBig: { width: 64, height: 96 },
    });
    expect(await developRaw({ raw, maxPixels: 50_000_000, maxSide: 95 })).toEqual({
      tooBig: { width: 64, height: 96 },
    });
  });
});

describe('rawLayout', () => {
  it('finds the full-size preview JPEG of DNG, CR2 and NEF, the smaller one of ARW, the sensor size and orientation', () => {
    for (const name of ['IMG_DNG.dng', 'IMG_CR2.CR2', 'IMG_NEF.NEF', 'IMG_ARW.ARW']) {
      const layout = rawLayout(files[name] as Buffer, rawKindOf(files[name] as Buffer) ?? 'dng');
      const previewWidth = name === 'IMG_ARW.ARW' ? 48 : 96;
      expect({ name, preview: layout.preview && [layout.preview.width, layout.preview.height] }).toEqual({
        name,
        preview: [previewWidth, previewWidth === 48 ? 32 : 64],
      });
      expect(layout.sensor).toEqual({ width: 96, height: 64 });
      expect(layout.orientation).toBe(6);
    }
  });

  it('a lossless JPEG (the raw data of a real CR2) is no preview', () => {
    const sof3 = Buffer.from([0xff, 0xd8, 0xff, 0xc3, 0, 11, 8, 0, 64, 0, 96, 1, 1, 0x11, 0]);
    expect(jpegFrameSize(sof3)).toBeUndefined();
  });
});

describe('rawKindOf', () => {
  it('a plain TIFF, a JPEG and a truncated TIFF header are no RAW', async () => {
    const tiff = await sharp({ create: { width: 40, height: 40, channels: 3, background: RAW_UPRIGHT.background } })
      .tiff()
      .toBuffer();
    expect(rawKindOf(tiff)).toBeUndefined();
    expect(rawKindOf(await sharp(tiff).jpeg().toBuffer())).toBeUndefined();
    expect(rawKindOf(Buffer.from('II*\0\x08\0\0\0\xff\xff', 'latin1'))).toBeUndefined();
  });

  it('RAF, CR3, ORF and RW2 by their own signatures', () => {
    expect(rawKindOf(Buffer.from('FUJIFILMCCD-RAW 0201FF383501'))).toBe('raf');
    const ftyp = Buffer.alloc(24);
    ftyp.writeUInt32BE(24, 0);
    ftyp.write('ftypcrx ', 4, 'latin1');
    expect(rawKindOf(ftyp)).toBe('cr3');
    const tiffLike = (magic: string) =>
      Buffer.concat([Buffer.from(magic, 'latin1'), Buffer.from([8, 0, 0, 0, 0, 0, 0, 0, 0, 0])]);
    expect(rawKindOf(tiffLike('IIRO'))).toBe('orf');
    expect(rawKindOf(tiffLike('IIU\0'))).toBe('rw2');
  });
});

/** An ISO-BMFF box: size, type (a uuid box's 16 bytes after it), content. */
function box(type: string, ...content: Buffer[]): Buffer {
  const [name, uuid] = type.split(':') as [string, string | undefined];
  const body = Buffer.concat([...(uuid ? [Buffer.from(uuid, 'hex')] : []), ...content]);
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + body.length);
  header.write(name, 4, 'latin1');
  return Buffer.concat([header, body]);
}

/** A CR3 as Canon lays it out (ftyp crx; moov with Canon's uuid box holding CMT1, the first track's stsz and co64
 * pointing at the full-size JPEG in mdat; the PRVW preview in its own uuid box), with `full` and a small `prvw`. */
function cr3File(full: Buffer, prvw: Buffer, orientation: number): Buffer {
  const cmt1 = Buffer.from('II*\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0\0\0\0\0\0\0\0\0\0\0', 'latin1');
  cmt1.writeUInt16LE(orientation, 18);
  const ftyp = box('ftyp', Buffer.from('crx \0\0\0\x01crx isom', 'latin1'));
  const prvwBody = Buffer.alloc(16);
  prvwBody.writeUInt32BE(prvw.length, 12);
  const preview = box('uuid:eaf42b5e1c984b88b9fbb7dc406e4d16', Buffer.alloc(8), box('PRVW', prvwBody, prvw));
  const moovFor = (offset: number) => {
    const stsz = Buffer.alloc(12);
    stsz.writeUInt32BE(full.length, 4);
    stsz.writeUInt32BE(1, 8);
    const co64 = Buffer.alloc(16);
    co64.writeUInt32BE(1, 4);
    co64.writeBigUInt64BE(BigInt(offset), 8);
    const stbl = box('stbl', box('stsz', stsz), box('co64', co64));
    return box(
      'moov',
      box('uuid:85c0b687820f11e08111f4ce462b6a48', box('CMT1', cmt1)),
      box('trak', box('mdia', box('minf', stbl))),
    );
  };
  const before = ftyp.length + moovFor(0).length + preview.length + 8; // the JPEG starts after mdat's header
  return Buffer.concat([ftyp, moovFor(before), preview, box('mdat', full)]);
}

describe('a CR3 (ISO-BMFF)', () => {
  it("gives the first track's full-size JPEG over the smaller PRVW, and CMT1's orientation", async () => {
    const picture = await rawPicture(6);
    const small = await sharp(picture.preview).resize(48, 32).jpeg().toBuffer();
    const cr3 = cr3File(picture.preview, small, 6);
    expect(rawKindOf(cr3)).toBe('cr3');
    const layout = rawLayout(cr3, 'cr3');
    expect(layout.preview && [layout.preview.width, layout.preview.height]).toEqual([96, 64]);
    expect(layout.orientation).toBe(6);
    const photo = await decodeRaw(cr3, 'cr3', 'preview');
    expect([photo.way, photo.width, photo.height]).toEqual(['preview', 64, 96]);
    expect(isMarker(at(photo.pixels, 64, 4, 4))).toBe(true);
  });
});
