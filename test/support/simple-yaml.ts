/**
 * The YAML subset Kubernetes manifests in `examples/` are written in: `---`-separated documents of
 * block maps, block lists (`- key: value`), plain or quoted scalars and `#` comments. Enough for a
 * test to read what a manifest declares; anything else (flow style, anchors, multi-line strings)
 * is refused rather than misread.
 */
export type YamlValue = string | number | boolean | null | YamlValue[] | { [key: string]: YamlValue };

interface Line {
  indent: number;
  text: string;
  number: number;
}

function scalar(raw: string, line: Line): YamlValue {
  const value = raw.trim();
  if (/^(['"]).*\1$/.test(value)) return value.slice(1, -1);
  if (/^[[{&*|>!]/.test(value)) throw new Error(`line ${line.number}: unsupported YAML: ${value}`);
  if (value === 'true' || value === 'false') return value === 'true';
  if (value === 'null' || value === '~') return null;
  if (/^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  return value;
}

function lines(doc: string, offset: number): Line[] {
  return doc
    .split('\n')
    .map((text, i) => ({ raw: text, number: offset + i + 1 }))
    .map(({ raw, number }) => {
      const withoutComment = /^\s*#/.test(raw)
        ? ''
        : raw.replace(/\s+#(?=(?:[^'"]|'[^']*'|"[^"]*")*$).*$/, '');
      const indent = withoutComment.length - withoutComment.trimStart().length;
      return { indent, text: withoutComment.trim(), number };
    })
    .filter((l) => l.text !== '');
}

function block(all: Line[], start: number, indent: number): [YamlValue, number] {
  if (all[start].text.startsWith('- ') || all[start].text === '-') return list(all, start, indent);
  return map(all, start, indent);
}

function list(all: Line[], start: number, indent: number): [YamlValue[], number] {
  const items: YamlValue[] = [];
  let i = start;
  while (
    i < all.length &&
    all[i].indent === indent &&
    (all[i].text.startsWith('- ') || all[i].text === '-')
  ) {
    const rest = all[i].text.slice(1).trimStart();
    if (rest === '') {
      const [value, next] = block(all, i + 1, all[i + 1].indent);
      items.push(value);
      i = next;
    } else if (/^[^'"]*?:(\s|$)/.test(rest)) {
      // `- key: value`: a map whose first line is the rest, indented past the dash
      const shifted: Line = {
        indent: indent + (all[i].text.length - rest.length),
        text: rest,
        number: all[i].number,
      };
      const copy = [...all];
      copy[i] = shifted;
      const [value, next] = map(copy, i, shifted.indent);
      items.push(value);
      i = next;
    } else {
      items.push(scalar(rest, all[i]));
      i += 1;
    }
  }
  return [items, i];
}

function map(all: Line[], start: number, indent: number): [{ [key: string]: YamlValue }, number] {
  const out: { [key: string]: YamlValue } = {};
  let i = start;
  while (i < all.length && all[i].indent === indent && !all[i].text.startsWith('- ')) {
    const match = /^(['"]?)([^'"]+?)\1:(?:\s+(.*))?$/.exec(all[i].text);
    if (!match) throw new Error(`line ${all[i].number}: expected "key: value", got ${all[i].text}`);
    const [, , key, rest] = match;
    if (rest !== undefined && rest.trim() !== '') {
      out[key] = scalar(rest, all[i]);
      i += 1;
      continue;
    }
    const next = all[i + 1];
    if (next && (next.indent > indent || (next.indent === indent && next.text.startsWith('- ')))) {
      const [value, after] = block(all, i + 1, next.indent);
      out[key] = value;
      i = after;
    } else {
      out[key] = null;
      i += 1;
    }
  }
  return [out, i];
}

/** The documents of a multi-document YAML text. */
export function parseYamlDocuments(text: string): YamlValue[] {
  const docs: YamlValue[] = [];
  let offset = 0;
  for (const doc of text.split(/^---\s*$/m)) {
    const parsed = lines(doc, offset);
    offset += doc.split('\n').length - 1;
    if (parsed.length === 0) continue;
    const [value, end] = block(parsed, 0, parsed[0].indent);
    if (end !== parsed.length) throw new Error(`line ${parsed[end].number}: unexpected indentation`);
    docs.push(value);
  }
  return docs;
}
