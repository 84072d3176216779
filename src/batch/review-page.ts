// review.html in a batch's output folder: each original beside its cutout over a checkerboard, the least confident
// first, those under the threshold marked. Offline and light for a 5,000-photo batch: plain HTML and CSS, no
// script, the images linked by relative URLs (nothing embedded) and loaded lazily, so it opens from file://.

import { rm } from 'node:fs/promises';
import { relative, sep } from 'node:path';
import { isFlagged } from '../engine/output/mask-confidence.js';
import { writeFileAtomic } from './atomic-write.js';

export const REVIEW_PAGE_NAME = 'review.html';

export interface ReviewEntry {
  /** Absolute paths. */
  input: string;
  output: string;
  /** Undefined from a server that does not send X-Confidence: listed last, never flagged. */
  confidence: number | undefined;
}

/** Writes the page into `outputDir` (atomically: a browser never reads half of it); gives its path. */
export async function writeReviewPage(outputDir: string, entries: ReviewEntry[], below: number): Promise<string> {
  const path = reviewPagePath(outputDir);
  await writeFileAtomic(path, Buffer.from(reviewPageHtml(outputDir, entries, below)));
  return path;
}

/** Removes the page an earlier run wrote into `outputDir`, if any. */
export async function removeReviewPage(outputDir: string): Promise<void> {
  await rm(reviewPagePath(outputDir), { force: true });
}

const reviewPagePath = (outputDir: string): string => `${outputDir}${sep}${REVIEW_PAGE_NAME}`;

/** Lowest confidence first; those without one last, in input order. */
export function reviewOrder(entries: readonly ReviewEntry[]): ReviewEntry[] {
  const rank = (entry: ReviewEntry) => entry.confidence ?? Number.POSITIVE_INFINITY;
  return [...entries].sort((a, b) => rank(a) - rank(b) || (a.input < b.input ? -1 : a.input > b.input ? 1 : 0));
}

export function reviewPageHtml(outputDir: string, entries: readonly ReviewEntry[], below: number): string {
  const ordered = reviewOrder(entries);
  const flagged = ordered.filter((entry) => isFlagged(entry.confidence, below)).length;
  const rows = ordered.map((entry) => row(outputDir, entry, isFlagged(entry.confidence, below))).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src 'self'; style-src 'unsafe-inline'">
<title>rmbg review: ${flagged} of ${entries.length} to check</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1rem; color: #222; }
h1 { font-size: 1.2rem; }
.photo { display: flex; gap: 1rem; align-items: flex-start; padding: .75rem 0; border-top: 1px solid #ddd; }
.photo.flagged { background: #fff4f0; }
.photo figure { margin: 0; }
.photo img { display: block; width: 240px; height: 180px; object-fit: contain; }
.cutout img { background: repeating-conic-gradient(#ccc 0 25%, #fff 0 50%) 0 0 / 16px 16px; }
.score { min-width: 8rem; }
.score b { font-size: 1.3rem; }
.flagged .score b { color: #b3261e; }
figcaption { max-width: 240px; overflow-wrap: anywhere; font-size: 12px; color: #555; }
</style>
</head>
<body>
<h1>${flagged} of ${entries.length} cutouts to check (confidence under ${below})</h1>
<p>Least confident first. Each original is beside its cutout, shown over a checkerboard where it is transparent.</p>
<main>
${rows}
</main>
</body>
</html>
`;
}

function row(outputDir: string, entry: ReviewEntry, flagged: boolean): string {
  const score = entry.confidence === undefined ? '–' : entry.confidence.toFixed(3);
  const name = escapeHtml(relative(outputDir, entry.output));
  return `<section class="photo${flagged ? ' flagged' : ''}" data-confidence="${score}">
<div class="score"><b>${score}</b><br>${flagged ? 'check it' : 'ok'}</div>
<figure class="original"><img src="${linkTo(outputDir, entry.input)}" alt="original" loading="lazy"><figcaption>${escapeHtml(entry.input)}</figcaption></figure>
<figure class="cutout"><img src="${linkTo(outputDir, entry.output)}" alt="cutout" loading="lazy"><figcaption>${name}</figcaption></figure>
</section>`;
}

/** A relative URL from the page to `file`: each segment percent-encoded (#, ?, %, quotes, spaces), then escaped. */
function linkTo(outputDir: string, file: string): string {
  const segments = relative(outputDir, file).split(sep);
  return escapeHtml(segments.map((segment) => (segment === '..' ? segment : encodeURIComponent(segment))).join('/'));
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ENTITIES[char] as string);
}
