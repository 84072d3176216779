// The pages a reader opens (the README, CONTRIBUTING.md, docs/, test/README.md): every link into the repository
// names a file or folder that exists, and every #anchor a heading of the page it points at, so moving a page or
// renaming a heading fails here rather than in a reader's browser.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/cli.js';

const PAGES = [
  'README.md',
  'CONTRIBUTING.md',
  'CHANGELOG.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  ...['test/README.md', 'bench/RESULTS.md'].filter((page) => existsSync(path.join(ROOT, page))),
];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1] as string)));
}

/** The Markdown links of a page outside code blocks: [text](target). */
function linksOf(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] as string);
}

describe('links in the docs', () => {
  it.each(PAGES)('%s links only to files and headings that exist', (page) => {
    const file = path.join(ROOT, page);
    const broken: string[] = [];
    for (const link of linksOf(readFileSync(file, 'utf8'))) {
      if (/^[a-z]+:/i.test(link)) continue; // https:, mailto:: outside the repository
      const [target = '', anchor] = link.split('#');
      const into = target ? path.resolve(path.dirname(file), target) : file;
      if (!existsSync(into)) broken.push(`${link} (no such file)`);
      else if (anchor && into.endsWith('.md') && !anchorsOf(into).has(anchor)) broken.push(`${link} (no such heading)`);
    }
    expect(broken).toEqual([]);
  });
});
