// What the next reader meets: no line of src/ past 160 characters (the formatter's 120 is passed only by a string it
// cannot break), and no row of a docs table past 600 (a row that long is a paragraph: it belongs under the table).

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { ROOT } from '../../helpers/cli.js';

const MAX_SOURCE_LINE = 160;
const MAX_TABLE_ROW = 600;

/** Each line of the files under `dir` (relative to the repository) whose name ends with `ending`, over `max`. */
function linesOver(dir: string, ending: string, max: number, only: (line: string) => boolean = () => true): string[] {
  const files = readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' }).filter((name) =>
    name.endsWith(ending),
  );
  return files.flatMap((name) =>
    readFileSync(path.join(ROOT, dir, name), 'utf8')
      .split('\n')
      .flatMap((line, index) =>
        line.length > max && only(line) ? [`${dir}/${name}:${index + 1} (${line.length} characters)`] : [],
      ),
  );
}

it(`no line of src/ runs past ${MAX_SOURCE_LINE} characters`, () => {
  expect(linesOver('src', '.ts', MAX_SOURCE_LINE)).toEqual([]);
});

it(`no row of a docs table runs past ${MAX_TABLE_ROW} characters`, () => {
  expect(linesOver('docs', '.md', MAX_TABLE_ROW, (line) => line.startsWith('|'))).toEqual([]);
});
