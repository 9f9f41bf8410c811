// A scalar card's download: every point of every run of the card in one
// file, from the per-run full-resolution downloads (GET
// /api/experiments/{eid}/scalars?format=json).

/** One run's download, as the server writes it (the layout of `tbup export`). */
export interface RunPoints {
  run: string;
  tag: string;
  points: { steps: number[]; wall_times: (number | string)[]; values: (number | string)[] };
}

/** A CSV field, quoted when it holds a comma, a quote or a line break. */
function csvField(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/**
 * The runs' points as one CSV (run,wall_time,step,value; a row per point,
 * runs in the order given) or one JSON document ({"tag", "runs": [{"run",
 * "points": {"steps", "wall_times", "values"}}]}).
 */
export function cardDownload(tag: string, runs: RunPoints[], format: "csv" | "json"): string {
  if (format === "json") {
    return JSON.stringify({ tag, runs: runs.map((r) => ({ run: r.run, points: r.points })) }) + "\n";
  }
  const out = ["run,wall_time,step,value"];
  for (const r of runs) {
    const name = csvField(r.run);
    const p = r.points;
    for (let i = 0; i < p.steps.length; i++) out.push(`${name},${p.wall_times[i]},${p.steps[i]},${p.values[i]}`);
  }
  return out.join("\r\n") + "\r\n";
}
