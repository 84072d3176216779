// rmbg as an npm user gets it: `npm pack`, the tarball unpacked into a temporary project whose dependencies
// resolve from this repository's node_modules (only the package's runtime dependencies, plus typescript and
// @types/node, as a consumer would have), then imported through `exports` and type-checked with tsc.
// Every program runs the warm-key model (RMBG_MODEL, test/helpers/fast-models.ts: real ONNX, milliseconds), since
// packaging, not cutouts, is checked here; the one docs example that names the packed default model runs it, made
// on first use from the data package (a dependency) into the user's cache, as after a consumer's `npm i rmbg`.

import { createHash } from 'node:crypto';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from '../../src/index.js';
import { openStore } from '../../src/store/index.js';
import { cliEnv, ensureBuilt, removeTempDirs, ROOT, tempDir } from '../helpers/cli.js';
import { writeWarmKeyModel } from '../helpers/fast-models.js';

const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  optionalDependencies: Record<string, string>;
};
const EXPORTS = ['ERRORS', 'RmbgError', 'close', 'createRmbg', 'createServer', 'removeBackground', 'removeBackgrounds'];

let project: string;
/** The model of every program here, unless it names one. */
let fastModel: string;
/** The user's cache (XDG_CACHE_HOME) of every program here: where the default model is made on first use. */
let cache: string;

/** Runs node in the consumer project; stdout is the script's JSON report. */
async function nodeIn(file: string): Promise<Record<string, unknown>> {
  const env = { RMBG_MODEL: fastModel, XDG_CACHE_HOME: cache };
  const result = await execa(process.execPath, [file], { cwd: project, env, reject: false });
  if (result.exitCode !== 0) throw new Error(`node ${file} exited ${result.exitCode}:\n${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

const DOC = () => readFileSync(path.join(ROOT, 'docs/library.md'), 'utf8');

/** The ```ts examples of docs/library.md, each as a module of the consumer project. */
function docExamples(): string[] {
  return [...DOC().matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => `${match[1]}\nexport {};\n`);
}

/** The ```js examples of docs/library.md, each under the file name its first line gives (`// report.cjs`). */
function docScripts(): Array<{ name: string; code: string }> {
  return [...DOC().matchAll(/```js\n\/\/ (\S+\.c?js)\n([\s\S]*?)```/g)].map((match) => ({
    name: match[1] as string,
    code: match[2] as string,
  }));
}

/** Compiles the consumer project's `include` with its own tsc, as a strict Node ESM project would, under a tsconfig
 * named `config` with `options` on top; resolves with what tsc printed (its errors, if any). */
async function tscIn(config: string, include: string[], options: Record<string, boolean>): Promise<string> {
  const compilerOptions = {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    strict: true,
    types: ['node'],
  };
  writeFileSync(
    path.join(project, config),
    JSON.stringify({ compilerOptions: { ...compilerOptions, ...options }, include }),
  );
  const tsc = await execa(process.execPath, [path.join(project, 'node_modules/typescript/bin/tsc'), '-p', config], {
    cwd: project,
    reject: false,
  });
  return tsc.stdout;
}

beforeAll(async () => {
  ensureBuilt();
  const work = tempDir();
  fastModel = writeWarmKeyModel(path.join(work, 'warm-key.onnx'));
  cache = path.join(work, 'cache');
  // --ignore-scripts: dist/ is built already (prepare would build it again).
  // --silent prints just the tarball's name (npm 11 and 12 shape --json differently).
  const packed = await execa('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', work], {
    cwd: ROOT,
  });
  const filename = packed.stdout.trim().split('\n').at(-1) as string;
  project = path.join(work, 'consumer');
  const installed = path.join(project, 'node_modules', 'rmbg');
  mkdirSync(installed, { recursive: true });
  await execa('tar', ['-xzf', path.join(work, filename), '-C', installed, '--strip-components=1']);
  const runtime = [...Object.keys(manifest.dependencies), ...Object.keys(manifest.optionalDependencies)];
  for (const name of [...runtime, 'typescript', '@types/node']) {
    mkdirSync(path.dirname(path.join(project, 'node_modules', name)), { recursive: true });
    symlinkSync(path.join(ROOT, 'node_modules', name), path.join(project, 'node_modules', name));
  }
  copyFileSync(path.join(ROOT, 'samples/chelsea.png'), path.join(project, 'cat.png'));
  writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
});

afterAll(() => removeTempDirs());

const models = JSON.parse(readFileSync(path.join(ROOT, 'models/manifest.json'), 'utf8')) as {
  default: string;
  models: Array<{ name: string; file: string; bytes: number; sha256: string }>;
};
const defaultModel = models.models.find((m) => m.name === models.default) as (typeof models.models)[number];

let firstRuns: Promise<Awaited<ReturnType<typeof execa>>[]> | undefined;
/** Two `rmbg remove` at once in the consumer project, the first runs of the default model: neither finds it made. */
function twoFirstRuns() {
  firstRuns ??= Promise.all(
    ['one', 'two'].map((name) =>
      execa(
        process.execPath,
        [path.join(project, 'node_modules/rmbg/bin/rmbg.js'), 'remove', 'cat.png', '--local', '-o', name, '--json'],
        {
          cwd: project,
          env: cliEnv({ env: { RMBG_DATA_DIR: path.join(cache, `data-${name}`), XDG_CACHE_HOME: cache } }),
          extendEnv: false,
          reject: false,
          timeout: 300_000,
        },
      ),
    ),
  );
  return firstRuns;
}

describe('the packed tarball', () => {
  it('exports the API and nothing deeper; importing loads neither sharp nor onnxruntime; a removal runs', async () => {
    writeFileSync(
      path.join(project, 'use.mjs'),
      `
      const heavy = () => process.report.getReport().sharedObjects.filter((file) => /sharp|vips|onnxruntime/.test(file));
      const started = performance.now();
      const rmbg = await import('rmbg');
      const importMs = performance.now() - started;
      const afterImport = heavy();
      const deep = await import('rmbg/dist/engine/pipeline.js').then(() => 'imported', (error) => error.code);
      const result = await rmbg.removeBackground(new URL('./cat.png', import.meta.url), { size: 'preview' });
      const afterRemoval = heavy();
      await rmbg.close();
      console.log(JSON.stringify({
        resolved: import.meta.resolve('rmbg'), exports: Object.keys(rmbg).sort(), importMs, afterImport, deep,
        result: { format: result.format, width: result.width, height: result.height, png: result.data.subarray(1, 4).toString() },
        afterRemoval,
      }));
      `,
    );
    const report = await nodeIn('use.mjs');
    expect(report.resolved).toBe(`file://${project}/node_modules/rmbg/dist/index.js`);
    expect(report.exports).toEqual(EXPORTS);
    expect(report.afterImport).toEqual([]);
    expect(report.deep).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
    expect(report.result).toEqual({ format: 'png', width: 451, height: 300, png: 'PNG' });
    // The control: the same check sees both native modules once a removal has run.
    const loaded = report.afterRemoval as string[];
    expect(loaded.some((file) => file.includes('sharp'))).toBe(true);
    expect(loaded.some((file) => file.includes('onnxruntime'))).toBe(true);
    console.log(`import('rmbg') from the tarball: ${(report.importMs as number).toFixed(1)} ms`);
  });

  it('createServer() from the tarball serves the web page at / (web/ is packed), and not with { ui: false }', async () => {
    writeFileSync(
      path.join(project, 'page.mjs'),
      `
      import { createServer } from 'rmbg';
      const statuses = [];
      for (const ui of [undefined, false]) {
        const server = await createServer({ port: 0, dataDir: ${JSON.stringify(tempDir())}, ui });
        const page = await fetch(server.url + '/');
        const script = await fetch(server.url + '/app.js');
        statuses.push({ ui, page: page.status, csp: page.headers.get('content-security-policy')?.startsWith("default-src 'self'") ?? false, script: script.status });
        await server.close();
      }
      console.log(JSON.stringify({ statuses }));
      `,
    );
    expect(await nodeIn('page.mjs')).toEqual({
      statuses: [
        { page: 200, csp: true, script: 200 },
        { ui: false, page: 404, csp: false, script: 404 },
      ],
    });
  });

  it("rmbg --version and rmbg doctor print the version of the tarball's package.json", async () => {
    const manifestFile = path.join(project, 'node_modules/rmbg/package.json');
    const packed = readFileSync(manifestFile, 'utf8');
    // A version written nowhere in the code: only a read of this package.json can print it.
    writeFileSync(manifestFile, JSON.stringify({ ...JSON.parse(packed), version: '9.8.7-packed' }));
    try {
      const bin = path.join(project, 'node_modules/rmbg/bin/rmbg.js');
      const env = cliEnv({ env: { RMBG_DATA_DIR: tempDir(), RMBG_MODEL: fastModel } });
      const run = (args: string[]) => execa(process.execPath, [bin, ...args], { cwd: project, env, extendEnv: false });
      const version = await run(['--version']);
      const doctor = await run(['doctor', '--json']);
      expect({ version: version.stdout, doctor: JSON.parse(doctor.stdout).rmbg }).toEqual({
        version: '9.8.7-packed',
        doctor: '9.8.7-packed',
      });
    } finally {
      writeFileSync(manifestFile, packed);
    }
  });

  it('where sharp lacks its platform binary, doctor, remove and serve say so in one line with the fix, exit 1', async () => {
    // A second project as an install that left out sharp's optional platform package (@img/sharp-<platform>)
    // leaves it: sharp itself copied there, everything else the same.
    const broken = path.join(tempDir(), 'no-sharp-binary');
    mkdirSync(path.join(broken, 'node_modules'), { recursive: true });
    for (const entry of readdirSync(path.join(project, 'node_modules'))) {
      const from = path.join(project, 'node_modules', entry);
      if (entry === 'rmbg') cpSync(from, path.join(broken, 'node_modules', entry), { recursive: true });
      else if (entry !== 'sharp') symlinkSync(realpathSync(from), path.join(broken, 'node_modules', entry));
    }
    cpSync(path.join(ROOT, 'node_modules/sharp'), path.join(broken, 'node_modules/sharp'), { recursive: true });
    const sharpManifest = JSON.parse(readFileSync(path.join(ROOT, 'node_modules/sharp/package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    for (const name of Object.keys(sharpManifest.dependencies)) {
      mkdirSync(path.dirname(path.join(broken, 'node_modules', name)), { recursive: true });
      symlinkSync(path.join(ROOT, 'node_modules', name), path.join(broken, 'node_modules', name));
    }
    const doctor = (folder: string) =>
      execa(process.execPath, [path.join(folder, 'node_modules/rmbg/bin/rmbg.js'), 'doctor'], {
        cwd: folder,
        env: cliEnv({ env: { RMBG_DATA_DIR: tempDir(), XDG_CACHE_HOME: cache, RMBG_MODEL: fastModel } }),
        extendEnv: false,
        reject: false,
      });
    const [healthy, missing] = await Promise.all([doctor(project), doctor(broken)]);
    expect(healthy.stdout).toMatch(/^sharp: loads \(\d+\.\d+\.\d+, libvips \d+\.\d+\.\d+\)$/m);
    expect(healthy.stdout).toMatch(/^onnxruntime-node: loads \(binding \d+\.\d+\.\d+\)$/m);
    expect(healthy.exitCode).toBe(0);
    expect(missing.stdout).toMatch(/^sharp: cannot load: .*sharp/m);
    expect(missing.stdout).toContain(`  fix: cd ${broken} && npm install --include=optional sharp`);
    expect(missing.stdout).toMatch(/^onnxruntime-node: loads/m);
    expect(missing.exitCode).toBe(1);
    // And a command that needs it says so in one line, with the same fix, whatever Node 20 does with a static import.
    copyFileSync(path.join(project, 'cat.png'), path.join(broken, 'cat.png'));
    const env = cliEnv({ env: { RMBG_DATA_DIR: tempDir(), XDG_CACHE_HOME: cache } });
    const bin = path.join(broken, 'node_modules/rmbg/bin/rmbg.js');
    for (const args of [
      ['remove', 'cat.png', '--local', '-o', 'out'],
      ['serve', '--port', '0'],
    ]) {
      const run = await execa(process.execPath, [bin, ...args], { cwd: broken, env, extendEnv: false, reject: false });
      expect([run.exitCode, run.stderr.split('\n').at(-1)], args[0]).toEqual([
        1,
        expect.stringMatching(
          new RegExp(
            `^rmbg: the engine cannot load sharp: Could not load the "sharp" module .*; fix: cd ${broken} && npm install --include=optional sharp \\(model_unavailable\\)$`,
          ),
        ),
      ]);
    }
  });

  it('a CommonJS module loads it with import() (and with require() where Node has require(esm): 20.19+)', async () => {
    writeFileSync(
      path.join(project, 'use.cjs'),
      `
      let required;
      try { require('rmbg'); required = 'loaded'; } catch (error) { required = error.code; }
      import('rmbg').then((rmbg) => console.log(JSON.stringify({ required, removeBackground: typeof rmbg.removeBackground })));
      `,
    );
    const requireEsm = (process.features as { require_module?: boolean }).require_module === true;
    expect(await nodeIn('use.cjs')).toEqual({
      required: requireEsm ? 'loaded' : 'ERR_REQUIRE_ESM',
      removeBackground: 'function',
    });
  });

  it('type-checks under moduleResolution nodenext: the docs examples compile, a wrong option name does not', async () => {
    const examples = docExamples();
    expect(examples.length).toBeGreaterThan(5);
    for (const [i, code] of examples.entries()) writeFileSync(path.join(project, `example-${i + 1}.ts`), code);
    // Every export is used by some example.
    for (const name of EXPORTS)
      expect(
        examples.some((code) => new RegExp(`\\b${name}\\b`).test(code)),
        name,
      ).toBe(true);
    writeFileSync(
      path.join(project, 'wrong-option.ts'),
      "import { removeBackground } from 'rmbg';\nawait removeBackground('cat.png', { sise: 'hd' });\n",
    );
    writeFileSync(
      path.join(project, 'wrong-code.ts'),
      "import { RmbgError } from 'rmbg';\nexport function what(error: RmbgError): string {\n  switch (error.code) {\n    case 'insufficient_credits': return 'top up';\n    case 'not_enough_credits': return 'never';\n    default: return error.message;\n  }\n}\n",
    );
    const tscOutput = await tscIn('tsconfig.json', ['*.ts'], { noEmit: true, skipLibCheck: false });
    const errors = tscOutput.split('\n').filter((line) => /error TS\d+/.test(line));
    expect(errors).toEqual([
      expect.stringMatching(
        /^wrong-code\.ts\(5,10\): error TS2678: Type '"not_enough_credits"' is not comparable to type '"interrupted" \| .*"upstream_error"'\.$/,
      ),
      expect.stringMatching(
        /^wrong-option\.ts\(2,37\): error TS2353: .*'sise' does not exist in type 'RemoveBackgroundOptions'/,
      ),
    ]);
  });

  it('the default model is made on first use in the user cache, verified, once; two first runs at once', async () => {
    const runs = await twoFirstRuns();
    for (const run of runs) expect({ exitCode: run.exitCode, stderr: run.stderr }).toMatchObject({ exitCode: 0 });
    expect(
      runs.some((run) => String(run.stderr).includes(`rmbg: preparing model ${models.default} on first use`)),
    ).toBe(true);
    for (const name of ['one', 'two'])
      expect(await sharp(path.join(project, name, 'cat.png')).metadata()).toMatchObject({ width: 451, height: 300 });
    const made = path.join(cache, 'rmbg/models', defaultModel.file);
    const bytes = readFileSync(made);
    expect({ bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }).toEqual({
      bytes: defaultModel.bytes,
      sha256: defaultModel.sha256,
    });
    // Whole files only: no temp file left; the package itself (node_modules/rmbg) is not written.
    expect(readdirSync(path.join(cache, 'rmbg/models')).sort()).toEqual([
      defaultModel.file,
      `${defaultModel.file}.verified`,
    ]);
    expect(readdirSync(path.join(project, 'node_modules/rmbg/models'))).toEqual(['manifest.json']);
    // Made once: the next run finds it.
    const again = await execa(
      process.execPath,
      [path.join(project, 'node_modules/rmbg/bin/rmbg.js'), 'remove', 'cat.png', '--local', '-o', 'three'],
      { cwd: project, env: cliEnv({ env: { RMBG_DATA_DIR: tempDir(), XDG_CACHE_HOME: cache } }), extendEnv: false },
    );
    expect(again.stderr).not.toContain('preparing model');
  }, 600_000);

  it('runs every example of docs/library.md as written, compiled from the tarball, next to the files they name', async () => {
    // The files the examples name, made from the samples: photos, a GIF (refused), a shoot with a subfolder.
    const rocket = path.join(ROOT, 'samples/rocket.jpg');
    for (const name of ['photo.jpg', 'a.jpg', 'b.jpg', 'c.jpg', 'huge.jpg'])
      copyFileSync(rocket, path.join(project, name));
    await sharp(rocket).gif().toFile(path.join(project, 'photo.gif'));
    mkdirSync(path.join(project, 'shoot/day2'), { recursive: true });
    copyFileSync(path.join(ROOT, 'samples/astronaut.png'), path.join(project, 'shoot/astronaut.png'));
    copyFileSync(path.join(ROOT, 'samples/coffee.png'), path.join(project, 'shoot/day2/coffee.png'));
    // The server the "through a server" example calls, with a key in RMBG_API_KEY.
    const dataDir = tempDir();
    const store = await openStore(dataDir);
    const { key } = await store.createAccountWithKey({ plan: 'pro', credits: 5 });
    await store.close();
    const server = await createServer({ port: 0, dataDir, ui: false, model: fastModel });

    try {
      const examples = docExamples();
      const programs = [
        ...examples.map((code, i) => ({ file: `run-${i + 1}.js`, code })),
        ...docScripts().map(({ name, code }) => {
          writeFileSync(path.join(project, name), code);
          return { file: name, code };
        }),
      ];
      for (const [i, code] of examples.entries()) writeFileSync(path.join(project, `run-${i + 1}.ts`), code);
      // The package's declarations are checked with the same examples by the type-check test above.
      expect(await tscIn('tsconfig.run.json', ['run-*.ts'], { noEmitOnError: true, skipLibCheck: true })).toBe('');
      expect(programs.map(({ file }) => file)).toContain('report.cjs');

      // createRmbg()'s example names isnet-medium-fp32, the packed default: it runs the real model from the tarball.
      await twoFirstRuns(); // the default model made (its first use prints on stderr)
      const env = {
        RMBG_DATA_DIR: tempDir(),
        RMBG_API_URL: server.url,
        RMBG_API_KEY: key,
        RMBG_MODEL: fastModel,
        XDG_CACHE_HOME: cache,
      };
      const printed = new Map<string, string>();
      for (const { file, code } of programs) {
        const run = await execa(process.execPath, [file], { cwd: project, env, reject: false, timeout: 180_000 });
        expect({ file, exitCode: run.exitCode, stderr: run.stderr }).toEqual({ file, exitCode: 0, stderr: '' });
        printed.set(code, run.stdout);
      }
      /** What the one example whose code contains `fragment` printed. */
      const output = (fragment: string) => {
        const matches = [...printed.keys()].filter((code) => code.includes(fragment));
        expect(matches, fragment).toHaveLength(1);
        return printed.get(matches[0] as string);
      };
      // What the examples say they print, on rocket.jpg (640×427) and the shoot of two.
      expect(output("{ size: 'hd', format: 'webp', crop: true }")).toMatch(
        /^webp \d+ \d+ \{ top: \d+, left: \d+, width: \d+, height: \d+ \}$/,
      );
      expect(output('openAsBlob')).toBe('true');
      expect(output('photos.map')).toBe("[ '640×427', '640×427', '640×427' ]");
      expect(output('RMBG_API_URL')).toMatch(/^\d+ \d+$/); // preview: at most 0.25 MP
      expect(output("recursive: true, size: 'hd'")).toContain('2 images');
      expect(output("recursive: true, size: 'hd'")).toContain('2 done, 0 skipped, 0 failed');
      expect(output('photo.gif')).toMatch(/^skipping: /);
      expect(output('createServer(')).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+\n200$/);
      expect(output("await import('rmbg')")).toBe('640 427');
      expect(existsSync(path.join(project, 'cutout.webp'))).toBe(true);
      expect(
        readdirSync(path.join(project, 'cutouts'), { recursive: true })
          .filter((name) => !String(name).startsWith('.rmbg-journal') && name !== 'review.html')
          .sort(),
      ).toEqual(['astronaut.png', 'day2', 'day2/coffee.png']);
    } finally {
      await server.close();
    }
  }, 900_000);
});
