// Every function the package exports carries a JSDoc @example, and every example type-checks as a user writes
// it: a module of its own importing from 'rmbg', under moduleResolution nodenext and strict (as sharp checks the
// examples of its docs). 'rmbg' is mapped to src/index.ts, so neither dist/ nor the build is needed.

import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/cli.js';

const ENTRY = path.join(ROOT, 'src/index.ts');
/** Where the examples' modules seem to lie: inside the package (ESM by its package.json), in no real folder. */
const EXAMPLES_DIR = path.join(ROOT, 'test/.jsdoc-examples');

const OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  types: ['node'],
  paths: { rmbg: [ENTRY] },
};

/** The files on disk (src/, @types/node, lib.d.ts), parsed once for every program here. */
const parsed = new Map<string, ts.SourceFile | undefined>();

/** A compiler host that also serves `files` (absolute path → text) from memory. */
function hostWith(files: ReadonlyMap<string, string>): ts.CompilerHost {
  const host = ts.createCompilerHost(OPTIONS);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (file) => files.has(file) || fileExists.call(host, file);
  host.readFile = (file) => files.get(file) ?? readFile.call(host, file);
  host.getSourceFile = (file, language, ...rest) => {
    const text = files.get(file);
    if (text !== undefined) return ts.createSourceFile(file, text, language);
    if (!parsed.has(file)) parsed.set(file, getSourceFile.call(host, file, language, ...rest));
    return parsed.get(file);
  };
  return host;
}

interface ExportedFunction {
  name: string;
  /** The code of each @example, without its ``` fence. */
  examples: string[];
}

/** The functions `entry` exports (its own and re-exported ones) with their @example blocks. */
function exportedFunctions(entry: string, files: ReadonlyMap<string, string> = new Map()): ExportedFunction[] {
  const program = ts.createProgram([entry], OPTIONS, hostWith(files));
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(program.getSourceFile(entry) as ts.SourceFile) as ts.Symbol;
  return checker
    .getExportsOfModule(module)
    .map((symbol) => ({
      name: symbol.name,
      target: symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol,
    }))
    .filter(({ target }) => target.flags & ts.SymbolFlags.Function)
    .map(({ name, target }) => ({
      name,
      examples: target
        .getJsDocTags(checker)
        .filter((tag) => tag.name === 'example')
        .map((tag) => ts.displayPartsToString(tag.text).replace(/^\s*```\w*\n|```\s*$/g, '')),
    }));
}

/** tsc's errors for each example, compiled as a module of its own: `file(line,col): message`. */
function typeErrors(examples: readonly string[]): string[] {
  const files = new Map(examples.map((code, i) => [path.join(EXAMPLES_DIR, `example-${i + 1}.ts`), code]));
  const program = ts.createProgram([...files.keys()], OPTIONS, hostWith(files));
  return [...files.keys()].flatMap((file) =>
    ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((diagnostic) => {
      const where = diagnostic.file?.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      return `${path.basename(diagnostic.file?.fileName ?? '?')}(${(where?.line ?? 0) + 1},${(where?.character ?? 0) + 1}): ${message}`;
    }),
  );
}

describe("the library's exported functions", () => {
  const functions = exportedFunctions(ENTRY);

  it('each carry a JSDoc @example', () => {
    expect(functions.map(({ name }) => name).sort()).toEqual([
      'close',
      'createRmbg',
      'createServer',
      'removeBackground',
      'removeBackgrounds',
    ]);
    expect(functions.filter(({ examples }) => examples.length === 0).map(({ name }) => name)).toEqual([]);
  });

  it("whose examples type-check against the package's types, each naming the function it documents", () => {
    for (const { name, examples } of functions)
      for (const code of examples)
        expect(code, name).toMatch(new RegExp(`import \\{[^}]*\\b${name}\\b[^}]*\\} from 'rmbg'`));
    expect(typeErrors(functions.flatMap(({ examples }) => examples))).toEqual([]);
  });

  it('the checks see a function without an example and an example that does not compile', () => {
    const entry = path.join(EXAMPLES_DIR, 'entry.ts');
    const source =
      "/** Undocumented. */\nexport function bare(): void {}\nexport { createRmbg } from '../../src/library/rmbg.js';\n";
    expect(exportedFunctions(entry, new Map([[entry, source]]))).toEqual([
      { name: 'bare', examples: [] },
      { name: 'createRmbg', examples: [expect.stringContaining('createRmbg()')] },
    ]);
    expect(
      typeErrors(["import { removeBackground } from 'rmbg';\nawait removeBackground('photo.jpg', { sise: 'hd' });\n"]),
    ).toEqual([
      expect.stringMatching(
        /^example-1\.ts\(2,39\): Object literal may only specify known properties, and 'sise' does not exist/,
      ),
    ]);
  });
});
