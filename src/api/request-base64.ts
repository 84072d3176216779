// Strict decoding of image_file_b64: plain, padded, standard-alphabet base64, at most LIMITS.maxImageBytes once decoded.
// Lenient decoders (Buffer.from) silently skip bad characters, which turns a client bug into a corrupt image.

import { RmbgError } from './errors.js';
import { LIMIT_TEXT, LIMITS } from './limits.js';

const FORBIDDEN = /[^A-Za-z0-9+/=]/;

export function decodeImageBase64(text: string): Buffer {
  if (/^data:/i.test(text)) {
    throw new RmbgError(
      'invalid_base64',
      "image_file_b64 must be plain base64 without a data-URL prefix; remove everything up to and including the comma of 'data:...;base64,'",
    );
  }
  const forbidden = FORBIDDEN.exec(text);
  if (forbidden) {
    const char = forbidden[0];
    const hint = /\s/.test(char)
      ? ' (send the base64 on one line, e.g. base64 -w0; in urlencoded bodies send + as %2B)'
      : char === '-' || char === '_'
        ? ' (URL-safe base64 is not accepted: use + and / instead of - and _)'
        : '';
    throw new RmbgError(
      'invalid_base64',
      `image_file_b64 contains ${JSON.stringify(char)} at position ${forbidden.index}; only A-Z, a-z, 0-9, +, / and = padding are allowed${hint}`,
    );
  }
  if (text.length % 4 !== 0) {
    throw new RmbgError(
      'invalid_base64',
      `image_file_b64 must be padded with = to a multiple of 4 characters; got ${text.length} characters`,
    );
  }
  const firstPad = text.indexOf('=');
  const padding = firstPad === -1 ? 0 : text.length - firstPad;
  if (padding > 2 || (padding > 0 && !/^={1,2}$/.test(text.slice(firstPad)))) {
    throw new RmbgError(
      'invalid_base64',
      'image_file_b64 may only end with one or two = padding characters; = was found elsewhere',
    );
  }
  const decodedBytes = (text.length / 4) * 3 - padding;
  if (decodedBytes > LIMITS.maxImageBytes) {
    throw new RmbgError(
      'file_too_large',
      `image_file_b64 decodes to ${decodedBytes} bytes; the image may be at most ${LIMITS.maxImageBytes} bytes (${LIMIT_TEXT.maxImageBytes})`,
    );
  }
  return Buffer.from(text, 'base64');
}
