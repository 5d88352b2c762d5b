/**
 * The folders of src/proxy are floors: value imports between them never loop, and `upstream/` (the
 * SDK seam and the checks of definitions) is the ground, importing nothing of the proxy above it.
 * docs/architecture.md ("Which folder may import which") draws the same layers.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const PROXY = path.resolve(__dirname, '../../../src/proxy');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return name.endsWith('.ts') ? [full] : [];
  });
}

/** The relative specifiers a file imports for their values (`import type` and type-only lists left out). */
function valueImports(source: string): string[] {
  const specifiers: string[] = [];
  const statement =
    /(?:^|\n)\s*(import|export)\s+([\s\S]*?)\s*from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g;
  for (const m of source.matchAll(statement)) {
    if (m[4] !== undefined) {
      specifiers.push(m[4]);
      continue;
    }
    const clause = m[2];
    if (/^type\s/.test(clause)) continue;
    const braces = /\{([\s\S]*)\}/.exec(clause);
    const outside = braces ? clause.replace(braces[0], '').replace(/,/g, '').trim() : clause.trim();
    const named = braces
      ? braces[1]
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '')
      : [];
    if (outside === '' && named.length > 0 && named.every((s) => s.startsWith('type '))) continue;
    specifiers.push(m[3]);
  }
  return specifiers.filter((s) => s.startsWith('.'));
}

/** The folder of src/proxy a file lives in (its first segment); undefined for files at the top. */
function folderOf(file: string): string | undefined {
  const rel = path.relative(PROXY, file);
  if (rel.startsWith('..')) return undefined;
  const parts = rel.split(path.sep);
  return parts.length > 1 ? parts[0] : undefined;
}

/** Folder → the folders it imports values from, each with one file that does. */
function folderGraph(): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of sourceFiles(PROXY)) {
    const from = folderOf(file);
    if (from === undefined) continue;
    for (const spec of valueImports(readFileSync(file, 'utf8'))) {
      const to = folderOf(path.resolve(path.dirname(file), spec));
      if (to === undefined || to === from) continue;
      const edges = graph.get(from) ?? new Map<string, string>();
      if (!edges.has(to)) edges.set(to, `${path.relative(PROXY, file)} -> ${spec}`);
      graph.set(from, edges);
    }
  }
  return graph;
}

/** Strongly connected groups of more than one folder (Tarjan). */
function cycles(graph: Map<string, Map<string, string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('the folders of src/proxy', () => {
  const graph = folderGraph();

  test('import values from each other without a cycle', () => {
    const described = cycles(graph).map((group) =>
      group
        .flatMap((from) =>
          [...(graph.get(from) ?? new Map<string, string>())]
            .filter(([to]) => group.includes(to))
            .map(([to, via]) => `${from} -> ${to} (${via})`),
        )
        .join('; '),
    );
    expect(described).toEqual([]);
  });

  test('keep upstream/ as the ground: it imports nothing of the proxy above it', () => {
    expect([...(graph.get('upstream')?.values() ?? [])]).toEqual([]);
  });

  test('are read as the layers they are (the check sees a cycle when one is there)', () => {
    const looped = new Map(graph);
    looped.set('upstream', new Map([['engine', 'a planted import']]));
    expect(cycles(looped).some((g) => g.includes('upstream') && g.includes('engine'))).toBe(true);
    expect(
      valueImports(
        "import type { A } from '../a';\nimport { type B } from '../b';\nimport { c } from '../c';",
      ),
    ).toEqual(['../c']);
  });
});
