/**
 * The valid name a misspelt one was probably meant to be, for the "did you mean" of a refused
 * option key or command-line flag: the library and the command line suggest alike.
 */

/** The valid name within two edits of `name`, case aside (a typo, not another word), if any. */
export function nearestName(name: string, valid: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of valid) {
    const d = distance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

/** Levenshtein distance, one row at a time. */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      next.push(Math.min(row[j]! + 1, next[j - 1]! + 1, substitution));
    }
    row = next;
  }
  return row[b.length]!;
}
