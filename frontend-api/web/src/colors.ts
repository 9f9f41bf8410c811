// Run colors: a fixed palette indexed by a run's position in the
// experiment's run list, so a run keeps its color under any filter.

const PALETTE = [
  "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#3366cc", "#dc3912",
  "#0f9d58", "#ab47bc", "#00acc1", "#ff7043", "#9e9d24", "#5c6bc0",
];

export function runColor(index: number): string {
  return PALETTE[index % PALETTE.length];
}

/** color with alpha (0..1) as #rrggbbaa. */
export function withAlpha(color: string, alpha: number): string {
  const a = Math.round(Math.min(Math.max(alpha, 0), 1) * 255)
    .toString(16)
    .padStart(2, "0");
  return color.length === 7 ? color + a : color;
}

/** A CSS custom property of the page (theme colors for canvas drawing). */
export function themeColor(name: string, fallback: string): string {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}
