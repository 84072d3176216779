// What rmbg says before any image is touched: usage errors exit 2 with a message naming what is allowed (of
// `rmbg remove` and of nested commands), help shows examples and exits 0 without loading the heavy native
// modules, and --dry-run lists the work and writes nothing.

import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jpegPhoto } from '../helpers/hostile-images.js';
import { ensureBuilt, removeTempDirs, rmbg, tempDir } from '../helpers/cli.js';
import { importRecorder, packagesIn } from '../helpers/import-recorder.js';
import { writeTree } from '../helpers/remove-local-files.js';

let work: string;

beforeAll(async () => {
  ensureBuilt();
  work = tempDir();
  writeTree(path.join(work, 'in'), {
    'photo.jpg': await jpegPhoto(200, 150),
    'sub/deep.jpg': await jpegPhoto(200, 150),
    'notes.txt': 'x',
  });
  writeTree(path.join(work, 'empty'), { 'readme.txt': 'no images here' });
  writeTree(path.join(work, 'nested'), { 'sub/photo.jpg': await jpegPhoto(200, 150) });
});

afterAll(removeTempDirs);

describe('rmbg remove: usage errors exit 2', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['an unknown flag', ['remove', 'in', '--local', '--bogus'], /unknown option '--bogus'/],
    [
      '--size huge',
      ['remove', 'in', '--local', '--size', 'huge'],
      /'huge' is invalid.*preview, small, regular, medium, hd, full, 4k, auto, 50MP/,
    ],
    ['--format gif', ['remove', 'in', '--local', '--format', 'gif'], /'gif' is invalid.*auto, png, jpg, webp/],
    [
      '--bg-color notacolour',
      ['remove', 'in', '--local', '--bg-color', 'notacolour'],
      /CSS colou?r name.*hex with 3, 4, 6 or 8 digits.*got 'notacolour'/,
    ],
    [
      '--concurrency 0',
      ['remove', 'in', '--local', '--concurrency', '0'],
      /--concurrency must be a whole number from 1 to 64; got '0'/,
    ],
    ['no input at all', ['remove', '--local'], /missing required argument 'inputs'/],
    [
      'an input path that does not exist',
      ['remove', 'no-such-folder', '--local'],
      /input no-such-folder does not exist/,
    ],
    [
      'a folder without images',
      ['remove', 'empty', '--local'],
      /no images found in empty \(JPG, PNG, WebP, HEIC\/HEIF, AVIF, TIFF or camera RAW \(DNG, CR2, CR3, NEF, ARW, RAF, ORF, RW2, PEF\); add --recursive for subfolders\)/,
    ],
    [
      'images only in subfolders, without --recursive',
      ['remove', 'nested', '--local'],
      /no images found in nested .*add --recursive/,
    ],
    ["'-' mixed with files", ['remove', '-', 'in', '--local'], /'-' \(stdin\) cannot be combined with other inputs/],
  ];

  it.each(cases)('%s', async (_name, args, message) => {
    const result = await rmbg(args, { cwd: work });
    expect(result.stderr).toMatch(message);
    expect(result.stdout).toBe('');
    expect(result.exitCode).toBe(2);
  });

  it('writes nothing when the command line is wrong', async () => {
    await rmbg(['remove', 'in', '-o', 'never', '--local', '--size', 'huge'], { cwd: work });
    await rmbg(['remove', 'in', '-o', 'never', '--local', '--bg-color', 'notacolour'], { cwd: work });
    expect(() => readFileSync(path.join(work, 'never/photo.png'))).toThrow(/ENOENT/);
  });
});

describe('usage errors of nested commands exit 2', () => {
  it.each([
    [['keys', 'create', '--plan', 'gold'], 'Allowed choices are pro, enterprise, free'],
    [
      ['credits', 'add', '5'],
      'name the account: --key-id ID (from `rmbg keys list`), --key - (the key on stdin), or RMBG_API_KEY',
    ],
    [['config', 'sett', 'size', 'hd'], "unknown action 'sett'"],
  ])('rmbg %j exits 2 with a message', async (args, message) => {
    const dataDir = tempDir();
    const result = await rmbg([...args, ...(args[0] === 'config' ? [] : ['--data-dir', dataDir])]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(message);
  });
});

describe('rmbg remove --dry-run', () => {
  it('lists what would be processed with its cost (0 credits on this computer) and writes nothing', async () => {
    const dry = await rmbg(['remove', 'in', '--local', '-o', 'dry-out', '--dry-run'], { cwd: work });
    expect(dry.exitCode).toBe(0);
    expect(dry.stdout).toContain(`would process ${path.join(work, 'in', 'photo.jpg')}`);
    expect(dry.stdout).toContain('0 credits');
    expect(existsSync(path.join(work, 'dry-out'))).toBe(false);
  });
});

describe('help', () => {
  it('rmbg --help lists the commands with examples, exits 0 and loads neither sharp nor onnxruntime', async () => {
    const recorder = importRecorder();
    const result = await rmbg(['--help'], { nodeArgs: recorder.nodeArgs });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/Usage: rmbg/);
    expect(result.stdout).toMatch(/Examples:\n\s+\$ rmbg remove \.\/photos --local/);
    for (const command of ['remove', 'serve', 'keys', 'account'])
      expect(result.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));

    const packages = packagesIn(recorder.loaded());
    expect(packages.has('commander'), 'the recorder sees bare package imports').toBe(true);
    for (const heavy of ['sharp', 'onnxruntime-node', 'onnxruntime-common', 'better-sqlite3', 'fastify', 'undici'])
      expect(packages.has(heavy), heavy).toBe(false);
  });

  it('the same recorder sees sharp and onnxruntime-node once a --local run loads the engine', async () => {
    // One engine load serves two checks: an output "folder" that is a file fails after the load, with a
    // one-line reason (exit 1, no stack trace), and the recorder must have seen the heavy modules by then.
    writeTree(work, { taken: 'a file, not a folder' });
    const recorder = importRecorder();
    const result = await rmbg(['remove', 'in', '-o', 'taken', '--local'], { cwd: work, nodeArgs: recorder.nodeArgs });
    // Where the model runs (said once, as it loads), then the one-line reason.
    expect(result.stderr).toMatch(/^rmbg: the model is running on the (CPU|GPU \(WebGPU\)): [^\n]*\n/);
    expect(result.stderr.split('\n').slice(1).join('\n').trimEnd()).toBe(
      `rmbg: cannot use ${path.join(work, 'taken')} as the output folder (a file is in the way); choose another -o (io_error)`,
    );
    expect(result.exitCode).toBe(1);
    expect(readFileSync(path.join(work, 'taken'), 'utf8')).toBe('a file, not a folder');
    const packages = packagesIn(recorder.loaded());
    expect(packages.has('sharp')).toBe(true);
    expect(packages.has('onnxruntime-node')).toBe(true);
  });

  it('rmbg remove --help shows the flags, examples and exit codes, and exits 0', async () => {
    const result = await rmbg(['remove', '--help']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/Usage: rmbg remove \[options\] <inputs\.\.\.>/);
    // The photo formats it takes, and what happens to those the API does not take (help wraps its lines).
    expect(result.stdout.replace(/\s+/g, ' ')).toContain(
      'JPG, PNG, WebP, HEIC/HEIF, AVIF, TIFF or camera RAW (DNG, CR2, CR3, NEF, ARW, RAF, ORF, RW2, PEF) (the API takes JPG, PNG and WebP: with --api-url the others are converted on this computer before upload)',
    );
    for (const flag of [
      '--local',
      '--recursive',
      '--overwrite',
      '--size <size>',
      '--format <format>',
      '--bg-color <color>',
      '--json',
      '-o, --output <dir>',
    ]) {
      expect(result.stdout).toContain(flag);
    }
    expect(result.stdout).toMatch(
      /Examples:\n\s+\$ rmbg remove photo\.jpg\s+# no API URL configured: on this computer/,
    );
    expect(result.stdout).toContain('cat in.jpg | rmbg remove - --local --format png > out.png');
    expect(result.stdout).toMatch(/Exit codes: 0 .*1 .*2 usage error, 130 interrupted/s);
  });
});
