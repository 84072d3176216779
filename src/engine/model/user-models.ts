// Models added with `rmbg models add`: copied into the data directory, so editing the original changes nothing.

import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { RmbgError } from '../../api/errors.js';
import type { ModelContract } from './model-contract.js';
import { withRegistryLock } from './model-locks.js';
import { hashAndStamp, stampPathOf } from './weight-check.js';

export interface UserModelEntry extends ModelContract {
  name: string;
  /** File name inside the user models folder. */
  file: string;
  bytes: number;
  sha256: string;
  /** The preset it was added with, if any (for `rmbg models list`). */
  preset?: string;
  /** Where the user's file was when it was added (the URL or file a pulled model came from). */
  addedFrom: string;
  /** A catalogue model brought by `rmbg models pull`: its licence and the hash its publisher pins. */
  pulled?: { licence: string; pin: string; version: string };
}

interface UserRegistry {
  models: UserModelEntry[];
}

/** The folder of user models inside a data directory. */
export const userModelsDirOf = (dataDir: string): string => join(dataDir, 'models');

const registryPath = (dir: string): string => join(dir, 'models.json');

/** A name usable as a file name and on a command line; never one that could be read as a path. */
export const USER_MODEL_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/i;

export function readUserModels(dir: string | undefined): UserModelEntry[] {
  if (!dir || !existsSync(registryPath(dir))) return [];
  try {
    return (JSON.parse(readFileSync(registryPath(dir), 'utf8')) as UserRegistry).models;
  } catch (error) {
    throw new RmbgError(
      'io_error',
      `cannot read the user model registry ${registryPath(dir)}: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

function writeRegistry(dir: string, models: UserModelEntry[]): void {
  const temp = `${registryPath(dir)}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify({ models } satisfies UserRegistry, null, 2)}\n`);
  renameSync(temp, registryPath(dir));
}

/** Copies `source` into the folder as NAME.onnx and records it with the copy's size and sha256. */
export async function addUserModel(
  dir: string,
  entry: Omit<UserModelEntry, 'file' | 'bytes' | 'sha256'>,
  source: string,
): Promise<UserModelEntry> {
  mkdirSync(dir, { recursive: true });
  const file = `${entry.name}.onnx`;
  const temp = join(dir, `${file}.${process.pid}.tmp`);
  copyFileSync(source, temp);
  renameSync(temp, join(dir, file));
  const sha256 = await hashAndStamp(join(dir, file));
  return recordUserModel(dir, { ...entry, file, bytes: statSync(join(dir, file)).size, sha256 });
}

/** Records a model whose file is in place and verified, replacing any entry of the same name. */
export function recordUserModel(dir: string, entry: UserModelEntry): UserModelEntry {
  withRegistryLock(dir, () => writeRegistry(dir, [...readUserModels(dir).filter((m) => m.name !== entry.name), entry]));
  return entry;
}

/** Forgets NAME and deletes its copy; false when there is no such user model. */
export function removeUserModel(dir: string, name: string): boolean {
  if (!existsSync(registryPath(dir))) return false;
  const entry = withRegistryLock(dir, () => {
    const models = readUserModels(dir);
    const found = models.find((m) => m.name === name);
    if (found)
      writeRegistry(
        dir,
        models.filter((m) => m !== found),
      );
    return found;
  });
  if (!entry) return false;
  rmSync(join(dir, entry.file), { force: true });
  rmSync(stampPathOf(join(dir, entry.file)), { force: true });
  return true;
}
