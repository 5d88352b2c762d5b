/**
 * What a definitions document says about itself that one object alone cannot: names and ids given
 * twice, and strategies naming a segment the document lacks. Both schemas of definitions check
 * these (each words them its own way; the flag server also checks dependencies).
 */
export type CrossReferenceProblem =
  | { readonly kind: 'second-name'; readonly path: (string | number)[]; readonly name: string }
  | { readonly kind: 'second-segment'; readonly path: (string | number)[]; readonly id: number }
  | { readonly kind: 'missing-segment'; readonly path: (string | number)[]; readonly id: number };

export interface CrossReferenced {
  readonly features: readonly {
    readonly name: string;
    readonly strategies?: readonly { readonly segments?: readonly number[] | null }[] | null;
  }[];
  readonly segments?: readonly { readonly id: number }[] | null;
}

/** The problems of `document`, in the order: second names, second segment ids, missing segments. */
export function crossReferenceProblems(document: CrossReferenced): CrossReferenceProblem[] {
  const problems: CrossReferenceProblem[] = [];
  const names = new Set<string>();
  document.features.forEach((f, i) => {
    if (names.has(f.name))
      problems.push({ kind: 'second-name', path: ['features', i, 'name'], name: f.name });
    names.add(f.name);
  });
  const ids = new Set<number>();
  (document.segments ?? []).forEach((s, i) => {
    if (ids.has(s.id)) problems.push({ kind: 'second-segment', path: ['segments', i, 'id'], id: s.id });
    ids.add(s.id);
  });
  document.features.forEach((f, i) =>
    (f.strategies ?? []).forEach((s, j) =>
      (s.segments ?? []).forEach((id, k) => {
        if (!ids.has(id))
          problems.push({
            kind: 'missing-segment',
            path: ['features', i, 'strategies', j, 'segments', k],
            id,
          });
      }),
    ),
  );
  return problems;
}
