// bg_color parsing: CSS colour names and hex with 3, 4, 6 or 8 digits, with or without a leading '#'
// (clients of the imitated API send bare hex such as 81d4fa).

import cssColorNames from 'color-name';
import { RmbgError } from './errors.js';

export interface Rgba {
  r: number;
  g: number;
  b: number;
  /** 0..1 */
  alpha: number;
}

const HEX = /^#?([0-9a-f]{3}|[0-9a-f]{4}|[0-9a-f]{6}|[0-9a-f]{8})$/i;

export function parseColor(text: string): Rgba {
  const value = text.trim();
  const named = (cssColorNames as Record<string, [number, number, number]>)[value.toLowerCase()];
  if (named && Object.hasOwn(cssColorNames, value.toLowerCase()))
    return { r: named[0], g: named[1], b: named[2], alpha: 1 };
  const match = HEX.exec(value);
  if (!match) {
    throw new RmbgError(
      'invalid_option',
      `bg_color must be a CSS colour name (e.g. white, rebeccapurple) or hex with 3, 4, 6 or 8 digits, '#' optional (e.g. 81d4fa, #fff8); got '${text}'`,
    );
  }
  let digits = match[1] as string;
  if (digits.length <= 4) digits = [...digits].map((d) => d + d).join('');
  const byte = (i: number) => parseInt(digits.slice(i * 2, i * 2 + 2), 16);
  return { r: byte(0), g: byte(1), b: byte(2), alpha: digits.length === 8 ? byte(3) / 255 : 1 };
}
