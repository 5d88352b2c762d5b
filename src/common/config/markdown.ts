import { maxOf, type OptionSpec } from './resolve';

/** The meaning of an option, with its maximum when it has one. */
function meaning(spec: OptionSpec): string {
  return spec.max === undefined ? spec.doc : `${spec.doc}; at most ${maxOf(spec)}`;
}

function shownDefault(spec: OptionSpec): string {
  if (spec.defaultDoc !== undefined) return spec.defaultDoc;
  if (spec.required) return '(required)';
  if (spec.default === undefined) return '(unset)';
  const value = Array.isArray(spec.default) ? spec.default.join(',') : String(spec.default);
  return `\`${value}\``;
}

/** ` (alias `UNLEASH_URL`)` after a name that has aliases; nothing otherwise. */
function aliasNote(aliases: readonly string[] | undefined): string {
  if (aliases === undefined || aliases.length === 0) return '';
  return ` (alias ${aliases.map((a) => `\`${a}\``).join(' / ')})`;
}

/** The markdown table of an option list (docs/configuration.md, docs/flags-server.md): one row per option. */
export function optionsMarkdownTable(specs: readonly OptionSpec[]): string {
  const rows = specs.map((spec) => {
    const env = spec.env.length > 0 ? spec.env.map((e) => `\`${e}\``).join(' / ') : '(code only)';
    return `| \`${spec.key}\`${aliasNote(spec.aliases?.code)} | ${env}${aliasNote(spec.aliases?.env)} | ${shownDefault(spec)} | ${meaning(spec)} |`;
  });
  return ['| Option | Environment variable | Default | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** The `.env.example` lines of an option list: a comment with meaning and default, then `#VAR=`. */
export function envExampleLines(specs: readonly OptionSpec[]): string[] {
  const lines: string[] = [];
  for (const spec of specs) {
    if (spec.env.length === 0) continue;
    const aliases = spec.aliases?.env ?? [];
    const aliasText =
      aliases.length > 0
        ? `. Also read as ${aliases.join(', ')} (the reference proxy's or Unleash Edge's name)`
        : '';
    lines.push(`# ${meaning(spec)}. Default: ${shownDefault(spec).replace(/`/g, '')}${aliasText}`);
    lines.push(`${spec.required ? '' : '#'}${spec.env[0]}=`);
  }
  return lines;
}
