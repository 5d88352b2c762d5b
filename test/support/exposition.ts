/** One sample line of a Prometheus text exposition. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A Prometheus text exposition, read as the format defines it (HELP/TYPE lines, samples). */
export class Exposition {
  readonly types = new Map<string, string>();
  readonly samples: Sample[] = [];

  constructor(readonly text: string) {
    for (const line of text.split('\n')) {
      if (line.startsWith('# TYPE ')) {
        const [name, type] = line.slice(7).split(' ');
        this.types.set(name, type);
        continue;
      }
      if (line === '' || line.startsWith('#')) continue;
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not an exposition line: ${line}`);
      const labels: Record<string, string> = {};
      for (const label of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
        labels[label[1]] = label[2].replace(/\\n/g, '\n').replace(/\\(.)/g, '$1');
      this.samples.push({ name: match[1], labels, value: Number(match[3]) });
    }
  }

  /** The samples of `name` whose labels include `labels`. */
  find(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter(
      (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
    );
  }

  /** The value of the one sample of `name` with exactly `labels`; undefined when there is none. */
  value(name: string, labels: Record<string, string> = {}): number | undefined {
    const exact = this.find(name, labels).filter(
      (s) => Object.keys(s.labels).length === Object.keys(labels).length,
    );
    if (exact.length > 1)
      throw new Error(`${exact.length} samples of ${name} with ${JSON.stringify(labels)}`);
    return exact[0]?.value;
  }

  /** Every metric family named by a TYPE line. */
  families(): string[] {
    return [...this.types.keys()];
  }
}
