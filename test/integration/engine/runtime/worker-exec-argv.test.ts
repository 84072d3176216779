// The inference worker's Node flags (src/engine/worker-exec-argv.ts), checked against Node itself: a worker
// started with them runs and sees the parent's --import and heap limit, and the list of options a worker takes
// is what Node's Worker accepts, option by option.

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { builtModule } from '../../../../src/platform/built-module.js';
import { workerExecArgv } from '../../../../src/engine/runtime/worker-exec-argv.js';
import { ensureBuilt, removeTempDirs, tempDir } from '../../../helpers/cli.js';

afterAll(() => removeTempDirs());

const BUILT = builtModule('engine/runtime/worker-exec-argv.js').href;

describe('workerExecArgv', () => {
  it('leaves the worker to inherit its parent options unless they hold --input-type', () => {
    expect(workerExecArgv([])).toBeUndefined();
    expect(workerExecArgv(['--max-old-space-size=300', '--import', './hook.mjs', '-e', 'code'])).toBeUndefined();
  });

  it('under --input-type, keeps the flags a worker takes, with their values, and drops the rest', () => {
    const parent = [
      '--import',
      './hook.mjs',
      '--input-type=module',
      '-r',
      './setup.cjs',
      '--loader=data:,',
      '--experimental-loader',
      './loader.mjs',
      '--max-old-space-size=300',
      '--stack-size=2000',
      '--title',
      'rmbg',
      '-C',
      'development',
      '--conditions=custom',
      '--enable-source-maps',
      '--no-warnings',
      '--no-opt',
      '--expose_gc',
      '--require=./other.cjs',
      '-e',
      'import "rmbg"',
    ];
    expect(workerExecArgv(parent)).toEqual([
      '--import',
      './hook.mjs',
      '-r',
      './setup.cjs',
      '--loader=data:,',
      '--experimental-loader',
      './loader.mjs',
      '-C',
      'development',
      '--conditions=custom',
      '--enable-source-maps',
      '--no-warnings',
      '--require=./other.cjs',
    ]);
    // Every spelling of the string input goes, code and all: -p, -pe, --print, --eval=, --input_type.
    expect(workerExecArgv(['--input_type', 'module', '-p', '1'])).toEqual([]);
    expect(
      workerExecArgv(['-pe', '1', '--input-type=commonjs', '--print', '2', '--eval=3', '--trace-warnings']),
    ).toEqual(['--trace-warnings']);
  });

  it('a worker started with them under `node --input-type=module --import … --max-old-space-size=… -e` runs the --import hook and has the heap limit', async () => {
    ensureBuilt();
    const dir = tempDir();
    const hook = path.join(dir, 'hook.mjs');
    writeFileSync(
      hook,
      "globalThis.hooked = (await import('node:worker_threads')).isMainThread ? 'main' : 'worker';\n",
    );
    const worker = path.join(dir, 'worker.mjs');
    writeFileSync(
      worker,
      `import { parentPort } from 'node:worker_threads';
      import { getHeapStatistics } from 'node:v8';
      parentPort.postMessage({ hooked: globalThis.hooked ?? null, heapLimitMb: Math.round(getHeapStatistics().heap_size_limit / 2 ** 20) });`,
    );
    const script = `
      import { Worker } from 'node:worker_threads';
      import { getHeapStatistics } from 'node:v8';
      import { workerExecArgv } from ${JSON.stringify(BUILT)};
      const worker = new Worker(${JSON.stringify(worker)}, { execArgv: workerExecArgv(process.execArgv) });
      const seen = await new Promise((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject); });
      console.log(JSON.stringify({ seen, mainHeapLimitMb: Math.round(getHeapStatistics().heap_size_limit / 2 ** 20) }));
      await worker.terminate();`;
    const run = await execa(
      process.execPath,
      ['--import', hook, '--max-old-space-size=300', '--input-type=module', '-e', script],
      { reject: false },
    );
    expect(run.stderr).toBe('');
    const { seen, mainHeapLimitMb } = JSON.parse(run.stdout) as {
      seen: { hooked: string; heapLimitMb: number };
      mainHeapLimitMb: number;
    };
    expect(mainHeapLimitMb).toBeLessThan(1000); // the flag took: Node's own default here is above 2 GB
    expect(seen).toEqual({ hooked: 'worker', heapLimitMb: mainHeapLimitMb });
  });

  it('keeps exactly the options that Node lets a worker take (each of Node’s options tried in a real Worker)', async () => {
    ensureBuilt();
    // Node's option table is internal (--expose-internals); each option is tried alone, with a value if it takes
    // one. Refused means Worker names the flag itself as invalid; an option refused for its value or for a
    // missing companion option (--heap-prof-dir without --heap-prof) says so instead, and is not judged here.
    const script = `
      const { getCLIOptionsInfo } = require('internal/options');
      const { Worker } = require('node:worker_threads');
      import(${JSON.stringify(BUILT)}).then(({ workerExecArgv }) => {
        const wrong = [];
        let judged = 0;
        for (const [name, { type }] of getCLIOptionsInfo().options) {
          if (!name.startsWith('--') || ['--eval', '--print', '--input-type'].includes(name)) continue;
          const arg = type >= 3 ? name + '=' + (type === 6 ? '127.0.0.1:9229' : type === 3 || type === 4 ? '1' : 'x') : name;
          let accepted;
          try {
            new Worker('', { eval: true, execArgv: [arg], stdout: true, stderr: true }).terminate();
            accepted = true;
          } catch (error) {
            if (error.message !== 'Initiated Worker with invalid execArgv flags: ' + arg) continue;
            accepted = false;
          }
          judged += 1;
          const kept = workerExecArgv(['--input-type=module', arg]);
          if (JSON.stringify(kept) !== JSON.stringify(accepted ? [arg] : [])) wrong.push({ arg, accepted, kept });
        }
        console.log(JSON.stringify({ judged, wrong }));
      });`;
    const run = await execa(process.execPath, ['--expose-internals', '-e', script], { reject: false });
    expect(run.stderr).toBe('');
    const { judged, wrong } = JSON.parse(run.stdout) as { judged: number; wrong: unknown[] };
    expect(wrong).toEqual([]);
    expect(judged).toBeGreaterThan(150); // Node 20 has 178 options; 17 are refused for their value or a companion
  });
});
