// Types of import-graph.mjs for the tests that read it.
export function readImportGraph(srcDir: string): Map<string, string[]>;
export function moduleOf(file: string): string;
export function moduleArrows(graph: Map<string, string[]>): [string, string][];
export function loopsOf(graph: Map<string, string[]>): string[][];
export function mermaidOf(arrows: [string, string][]): string;
export function withCurrentMap(page: string, srcDir: string): string;
