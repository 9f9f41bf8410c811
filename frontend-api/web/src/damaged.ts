// Event records the uploader skipped as damaged (a bad CRC, a truncated or
// unparsable record), as it reported them with the upload: said on the
// experiment page, with the files, and not only on the uploader's terminal.

import { h } from "./dom";
import type { DamagedRecords } from "./api";

/** "3 damaged records skipped in 2 files"; "" when nothing was skipped. */
export function damagedSummary(d: DamagedRecords | undefined): string {
  const records = Number(d?.records ?? 0);
  if (!(records > 0)) return "";
  const files = Number(d?.numFiles ?? 0);
  const n = (k: number, one: string, many: string) => `${k.toLocaleString("en-US")} ${k === 1 ? one : many}`;
  return `${n(records, "damaged record", "damaged records")} skipped in ${n(files, "file", "files")}`;
}

/** The files named, and how many more there are beyond them. */
export function damagedFiles(d: DamagedRecords | undefined): { files: string[]; more: number } {
  const files = d?.files ?? [];
  return { files, more: Math.max(Number(d?.numFiles ?? 0) - files.length, 0) };
}

/** A folded note under the experiment's header: the summary, opening to the files (the owner's); null when none. */
export function damagedNote(d: DamagedRecords | undefined): HTMLElement | null {
  const summary = damagedSummary(d);
  if (!summary) return null;
  const { files, more } = damagedFiles(d);
  // Only the owner is told the files' names (they carry the host that wrote them).
  if (!files.length) return h("div.damaged", { title: "Records the uploader could not read (TensorBoard skips them too)" }, `⚠ ${summary}`);
  return h(
    "details.damaged",
    { title: "Records the uploader could not read (TensorBoard skips them too)" },
    h("summary", null, `⚠ ${summary}`),
    h("ul.damaged-files", null, files.map((f) => h("li", null, h("code", null, f))), more ? h("li.more", null, `and ${more.toLocaleString("en-US")} more`) : null),
  );
}
