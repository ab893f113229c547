/**
 * What `--only=a,b` selects: the scenarios, fixtures or scripts whose name contains one of the
 * terms; a term that is a whole name selects that name alone (one scenario's name may start
 * another's). The answer says whether something going by any of `names` was selected; without
 * `--only`, everything is.
 */
export function selection(
  only: string | undefined,
  allNames: readonly string[],
): (...names: string[]) => boolean {
  const terms = only?.split(",").filter(Boolean);
  if (!terms) return () => true;
  const known = new Set(allNames);
  const selects = (term: string, name: string) => (known.has(term) ? name === term : name.includes(term));
  return (...names) => terms.some((term) => names.some((name) => selects(term, name)));
}
