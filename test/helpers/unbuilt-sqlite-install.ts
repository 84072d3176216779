// rmbg installed as npm 12 installs it without allowScripts: better-sqlite3's package is there, its native addon never
// built. A temp folder with what the tarball packs of this checkout (bin/, dist/, …), whose node_modules links every other package
// to this checkout's and holds a copy of better-sqlite3 without build/. The checkout's own node_modules is untouched.

import { cpSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { ROOT, tempDir } from './cli.js';

export interface UnbuiltSqliteInstall {
  /** The install's folder. */
  root: string;
  /** The install's bin/rmbg.js. */
  bin: string;
  /** Its better-sqlite3 folder (no build/). */
  betterSqlite3: string;
}

/** Made in a tempDir() (removed by removeTempDirs()); `absent`: without better-sqlite3 at all (an optional
 * dependency left out). */
export function unbuiltSqliteInstall({ absent = false }: { absent?: boolean } = {}): UnbuiltSqliteInstall {
  const root = tempDir('rmbg-unbuilt-sqlite-');
  // What the packed tarball holds (package.json `files`).
  for (const part of ['bin', 'dist', 'package.json', 'models/manifest.json', 'web'])
    cpSync(path.join(ROOT, part), path.join(root, part), { recursive: true });
  const modules = path.join(root, 'node_modules');
  mkdirSync(modules);
  for (const name of readdirSync(path.join(ROOT, 'node_modules')))
    if (name !== 'better-sqlite3') symlinkSync(path.join(ROOT, 'node_modules', name), path.join(modules, name));
  const betterSqlite3 = path.join(modules, 'better-sqlite3');
  const source = path.join(ROOT, 'node_modules', 'better-sqlite3');
  if (!absent)
    cpSync(source, betterSqlite3, { recursive: true, filter: (from) => from !== path.join(source, 'build') });
  return { root, bin: path.join(root, 'bin', 'rmbg.js'), betterSqlite3 };
}
