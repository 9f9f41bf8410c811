// Short run names that keep what tells runs apart. Runs of a sweep share
// long prefixes ("Ray_PPO_cycle_1e6/PPO_JBW-cycle-1e6_0003") and differ
// at the end (trial numbers, seeds, hashes), so a name cut at its end
// reads like its neighbours; these cut the shared part instead, and always
// say where they cut with "…".

/** The mark put where a name was cut. */
export const CUT = "…";

/**
 * name in at most max characters: whole if it fits, else its start and
 * its end around "…", keeping more of the end (60%) than of the start.
 */
export function cutMiddle(name: string, max: number): string {
  if (name.length <= max) return name;
  const keep = Math.max(max - 1, 2);
  const head = Math.max(Math.floor(keep * 0.4), 1);
  return name.slice(0, head) + CUT + name.slice(name.length - (keep - head));
}

/**
 * The folders ("a/b/") every one of names starts with: the common prefix
 * up to its last "/"; "" for fewer than two names.
 */
export function sharedFolder(names: string[]): string {
  if (names.length < 2) return "";
  let n = names[0].length;
  for (const name of names) {
    let i = 0;
    while (i < n && i < name.length && name[i] === names[0][i]) i++;
    n = i;
  }
  return names[0].slice(0, names[0].lastIndexOf("/", n - 1) + 1);
}

/**
 * A short name, at most max characters, for each of names (run names shown
 * together: a runs list, a tooltip, a legend). A name that fits is kept
 * whole; a longer one loses the folders all names share ("…/" in their
 * place), then, if still too long, its middle (cutMiddle).
 */
export function shortRunNames(names: string[], max: number): Map<string, string> {
  const folder = sharedFolder(names);
  const out = new Map<string, string>();
  for (const name of names) {
    if (name.length <= max) out.set(name, name);
    else if (folder && name.length > folder.length) out.set(name, CUT + "/" + cutMiddle(name.slice(folder.length), max - 2));
    else out.set(name, cutMiddle(name, max));
  }
  return out;
}
