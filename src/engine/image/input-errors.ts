// The input gate's refusals, worded once: each says what was wrong and what rmbg accepts.

import { RmbgError, messageOf } from '../../api/errors.js';

/** The formats the API accepts (api-spec: image_file), as users read them. */
export const ACCEPTED_FORMATS = 'JPG, PNG or WebP';

/** A decoder's complaint as one line: libvips repeats a warning once per pass and ends lines with newlines, and an
 * error message must stay one line on stderr and in JSON lines. */
export function decoderReason(error: unknown): string {
  const message = messageOf(error);
  const firstLine = message
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line !== '');
  return firstLine ?? 'no reason given';
}

export function corruptImage(reason: string, cause?: unknown): RmbgError {
  return new RmbgError('corrupt_image', `${reason}; send a complete, undamaged ${ACCEPTED_FORMATS} file`, { cause });
}

export function animatedImage(what: string): RmbgError {
  return new RmbgError(
    'animated_image',
    `the image is ${what}; animated images are not supported: send a still ${ACCEPTED_FORMATS} image`,
  );
}

export function unsupportedFormat(found: string): RmbgError {
  return new RmbgError('unsupported_image_format', `${found}; ${ACCEPTED_FORMATS} only`);
}
