import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';

/**
 * The layout's rules (README "Layout", issue 26): a room (a folder of src/) never imports the files at src/'s
 * top (config, context, app, server: they assemble the rooms), enters another room only through its index.ts,
 * and no rooms import each other in a loop. Relative imports, `import type`, `export … from` and `import()` count.
 */

const SRC = path.join(import.meta.dirname, '../../src');

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return /\.tsx?$/.test(e.name) ? [p] : [];
  });

/** The room a file belongs to, or `null` for a file at src/'s top. */
const roomOf = (file: string) => {
  const parts = path.relative(SRC, file).split(path.sep);
  return parts.length > 1 ? parts[0]! : null;
};

/** Every relative import of a source text, as written. */
export const importsOf = (source: string) =>
  [...source.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);

interface Edge {
  from: string;
  to: string;
}

function edgesOf(files: string[]): Edge[] {
  return files.flatMap((from) =>
    importsOf(readFileSync(from, 'utf8')).map((spec) => ({
      from,
      to: path.resolve(path.dirname(from), spec),
    })),
  );
}

/** The loops in a graph of rooms, each as `a -> b -> a`. */
export function cyclesOf(graph: Map<string, Set<string>>): string[] {
  const cycles: string[] = [];
  const done = new Set<string>();
  const stack: string[] = [];
  const visit = (n: string) => {
    stack.push(n);
    for (const next of graph.get(n) ?? []) {
      const at = stack.indexOf(next);
      if (at !== -1) cycles.push([...stack.slice(at), next].join(' -> '));
      else if (!done.has(next)) visit(next);
    }
    stack.pop();
    done.add(n);
  };
  for (const n of graph.keys()) if (!done.has(n)) visit(n);
  return cycles;
}

it('reads every form of relative import, and finds a loop of rooms', () => {
  const text = [
    "import { a } from '../a/index.ts';",
    "import type { B } from './b.ts';",
    "export { c } from '../c/index.ts';",
    "const d = await import('../d/index.ts');",
    "import x from 'zod';",
  ].join('\n');
  expect(importsOf(text)).toEqual(['../a/index.ts', './b.ts', '../c/index.ts', '../d/index.ts']);
  const graph = new Map([
    ['a', new Set(['b'])],
    ['b', new Set(['c'])],
    ['c', new Set(['a'])],
  ]);
  expect(cyclesOf(graph)).toEqual(['a -> b -> c -> a']);
  expect(cyclesOf(new Map([['a', new Set(['b'])]]))).toEqual([]);
});

it('no room imports upward, every crossing goes through the other room’s index.ts, and rooms make no loop', () => {
  const edges = edgesOf(sourceFiles(SRC));
  const rel = (f: string) => path.relative(SRC, f);
  const upward: string[] = [];
  const sideDoors: string[] = [];
  const graph = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    const a = roomOf(from);
    const b = roomOf(to);
    if (a === null || a === b) continue;
    if (b === null) {
      upward.push(`${rel(from)} -> ${rel(to)}`);
      continue;
    }
    if (path.relative(path.join(SRC, b), to) !== 'index.ts') sideDoors.push(`${rel(from)} -> ${rel(to)}`);
    graph.set(a, (graph.get(a) ?? new Set()).add(b));
  }
  // Enough edges were read for the rest to mean something.
  expect(graph.size).toBeGreaterThan(15);
  expect(upward).toEqual([]);
  expect(sideDoors).toEqual([]);
  expect(cyclesOf(graph)).toEqual([]);
});
