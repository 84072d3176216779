// Types of raw-files.mjs (emitted by tsc from it), for the tests and benches that import it.
type Value = number[] | string | Buffer;
interface Field {
  tag: number;
  type: number;
  /** Numbers (rationals as numerator, denominator pairs), ASCII text, or bytes. */
  value?: Value;
  /** The field holds the offset of these bytes, written elsewhere in the file (a strip, a JPEG). */
  data?: Buffer;
  /** The field holds the offsets of these IFDs (SubIFDs, the Exif IFD). */
  ifds?: Ifd[];
}
export interface Ifd {
  fields: Field[];
  next?: Ifd;
}
/** What a fixture RAW is made of: its picture as stored on the sensor, and how a viewer turns it. */
export interface RawPicture {
  /** The stored (sensor) size; the upright picture is height × width for orientations 5-8. */
  width: number;
  height: number;
  /** TIFF Orientation (274) of IFD0. */
  orientation: number;
  /** RGB pixels of the stored picture. */
  rgb: Buffer;
  /** The camera's JPEG of the stored picture at full size, and a small thumbnail. */
  preview: Buffer;
  thumbnail: Buffer;
  /** 8-bit RGB pixels of the thumbnail (an uncompressed strip in DNG and NEF). */
  thumbnailRgb: Buffer;
  thumbnailSize: {
    width: number;
    height: number;
  };
}
/** Upright picture: blue-grey, a warm red square in the top-left corner (the warm-key model's foreground). */
export declare const RAW_UPRIGHT: {
  readonly background: {
    readonly r: 90;
    readonly g: 110;
    readonly b: 140;
  };
  readonly marker: {
    readonly r: 255;
    readonly g: 0;
    readonly b: 0;
  };
};
/** The picture stored for `orientation` (1 or 6): upright `uprightWidth` × `uprightHeight`, the marker top-left. */
export declare function rawPicture(
  orientation: 1 | 6,
  uprightWidth?: number,
  uprightHeight?: number,
): Promise<RawPicture>;
/** EXIF of every fixture: authorship and dates, which --keep-metadata keeps. */
export declare const RAW_EXIF: {
  readonly artist: 'Ada Photographer';
  readonly copyright: '(c) Ada';
  readonly taken: '2026:05:04 10:11:12';
};
/** DNG 1.4: IFD0 the thumbnail and the DNG tags, SubIFDs the CFA image (NewSubFileType 0) and the full-size
 * preview (NewSubFileType 1, compression 7). */
export declare function dngFile(picture: RawPicture): Buffer;
/** CR2: "CR", version 2 and the raw IFD's offset after the TIFF header; IFD0 the full-size JPEG (compression 6,
 * strips), IFD1 a small JPEG, IFD2 a small RGB image, IFD3 the raw image. */
export declare function cr2File(picture: RawPicture): Buffer;
/** NEF (big-endian): IFD0 a small RGB thumbnail, SubIFDs the full-size JPEG (513/514) and the CFA image. */
export declare function nefFile(picture: RawPicture): Buffer;
/** ARW: IFD0 the camera's JPEG by 513/514, which on Sony bodies is smaller than the sensor (1616 px wide on a 42 MP
 * one; here a quarter-size `preview`), SubIFDs the CFA image; IFD1 the thumbnail. */
export declare function arwFile(picture: RawPicture, preview: Buffer): Buffer;
/** Every fixture RAW of `picture`, by file name. */
export declare function rawFiles(picture: RawPicture, stem?: string): Promise<Record<string, Buffer>>;
