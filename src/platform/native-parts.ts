// Whether each native part rmbg runs on loads here (`rmbg doctor`): sharp (libvips) and onnxruntime's binding; the
// SQLite driver's check is the store's, above this floor (cli/sqlite-check.ts). Each is loaded for real, since an
// installed package whose binary is missing or built for another Node only fails then.

import { createRequire } from 'node:module';

export interface NativePart {
  name: string;
  loads: boolean;
  /** What loaded: versions of the package and its library. */
  version?: string;
  /** Why it does not load: the first line of the error. */
  error?: string;
  /** The command that fixes it, where the error does not already say. */
  fix?: string;
}

/** The first line of an error's message: what a check shows of why a part does not load. */
export const firstLine = (error: unknown): string =>
  String((error as Error)?.message ?? error).split('\n')[0] as string;

/** Where a dependency is installed, for a fix that runs npm there. */
function installFolder(name: string): string {
  try {
    const manifest = createRequire(import.meta.url).resolve(`${name}/package.json`);
    return manifest.slice(0, manifest.lastIndexOf(`/node_modules/${name}/`));
  } catch {
    return '.';
  }
}

export async function checkSharp(): Promise<NativePart> {
  try {
    const { default: sharp } = await import('sharp');
    return { name: 'sharp', loads: true, version: `${sharp.versions.sharp}, libvips ${sharp.versions.vips}` };
  } catch (error) {
    return {
      name: 'sharp',
      loads: false,
      error: firstLine(error),
      // sharp's binaries are optional dependencies for each platform: an install that left them out lacks this one.
      fix: `cd ${installFolder('sharp')} && npm install --include=optional sharp`,
    };
  }
}

export async function checkOnnxruntime(): Promise<NativePart> {
  try {
    const ort = await import('onnxruntime-node');
    return { name: 'onnxruntime-node', loads: true, version: `binding ${ort.env.versions.node}` };
  } catch (error) {
    return {
      name: 'onnxruntime-node',
      loads: false,
      error: firstLine(error),
      fix: `cd ${installFolder('onnxruntime-node')} && npm rebuild onnxruntime-node`,
    };
  }
}
