// docs/api.md's table of error codes is the error table's: every code a client can receive (wireErrorCodes),
// in the table's order, with its status and title (the docs may add a note in parentheses after the title).

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERRORS, wireErrorCodes } from '../../../src/api/errors.js';
import { ROOT } from '../../helpers/cli.js';

/** The rows `| status | \`code\` | title |` of a Markdown text, as [status, code, title]. */
function errorRows(markdown: string): Array<[number, string, string]> {
  return [...markdown.matchAll(/^\| (\d{3}) \| `([a-z0-9_]+)` \| (.+) \|$/gm)].map(
    (match) => [Number(match[1]), match[2] as string, match[3] as string] as [number, string, string],
  );
}

describe("docs/api.md's error codes", () => {
  it('are the codes of src/api/errors.ts a client can receive, with their status and title', () => {
    const documented = errorRows(readFileSync(path.join(ROOT, 'docs/api.md'), 'utf8'));
    expect(documented.map(([status, code]) => [status, code])).toEqual(
      wireErrorCodes().map((code) => [ERRORS[code].status, code]),
    );
    for (const [, code, title] of documented)
      expect(title.replace(/ \(.*\)$/, ''), code).toBe(ERRORS[code as keyof typeof ERRORS].title);
  });
});
