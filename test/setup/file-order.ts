// The order test files start in. vitest starts the longest first by its own record of the last run, but a fresh
// clone (CI, a new contributor) has none and starts the largest files first: the memory soaks, short files that run
// for minutes, then started last and ran alone at the end. Without vitest's record this uses the committed one,
// test/file-durations.json (`npm run test:durations` writes it anew from vitest's record of a whole run).

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The committed record: seconds a file took, by `project:path`. */
export const RECORD_FILE = path.join(import.meta.dirname, '..', 'file-durations.json');

function recordedSeconds(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(RECORD_FILE, 'utf8'));
  } catch {
    return {};
  }
}

export class RecordedDurationSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const recorded = recordedSeconds();
    const root = this.ctx.config.root;
    const key = (file: TestSpecification) => `${file.project.name}:${path.relative(root, file.moduleId)}`;
    // A file neither record knows (a new one) first, as vitest does: it is likely the one being worked on.
    const seconds = (file: TestSpecification) => {
      const cached = this.ctx.cache.getFileTestResults(key(file));
      if (cached) return cached.failed ? Number.POSITIVE_INFINITY : cached.duration / 1000;
      return recorded[key(file)] ?? Number.POSITIVE_INFINITY;
    };
    // vitest's grouping stays: by project (unit's files share workers, integration's are isolated), then longest first.
    return [...files].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        a.project.name.localeCompare(b.project.name) ||
        seconds(b) - seconds(a),
    );
  }
}
