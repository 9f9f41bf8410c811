// Per-node compute time and memory from a RunMetadata (text format, as
// graphs/run_metadata serves it): its step_stats list, per device, the
// nodes that ran with their start and end times and allocations.

import type { Message, Value } from "./pbtxt";

export interface NodeStats {
  /**
   * Time from the start of each of the node's executions to its end,
   * summed: all_end_rel_micros, or op_end_rel_micros when that is all the
   * writer recorded (both count from all_start_micros).
   */
  micros: number;
  /** Bytes allocated: memory[].total_bytes, or else the outputs' requested_bytes. */
  bytes: number;
  device: string;
}

const msgs = (v: Value[] | undefined): Message[] => (v ?? []).filter((x): x is Message => typeof x === "object");
const num = (v: Value[] | undefined): number => (typeof v?.[0] === "number" ? v[0] : Number(v?.[0] ?? 0) || 0);

export function nodeStats(md: Message): Map<string, NodeStats> {
  const out = new Map<string, NodeStats>();
  for (const steps of msgs(md.step_stats))
    for (const dev of msgs(steps.dev_stats)) {
      const device = String(dev.device?.[0] ?? "");
      for (const ns of msgs(dev.node_stats)) {
        const name = String(ns.node_name?.[0] ?? "");
        if (!name) continue;
        let bytes = 0;
        for (const m of msgs(ns.memory)) bytes += num(m.total_bytes);
        if (!bytes)
          for (const o of msgs(ns.output))
            for (const td of msgs(o.tensor_description)) for (const ad of msgs(td.allocation_description)) bytes += num(ad.requested_bytes);
        const s = out.get(name) ?? { micros: 0, bytes: 0, device };
        s.micros += num(ns.all_end_rel_micros) || num(ns.op_end_rel_micros);
        s.bytes += bytes;
        out.set(name, s);
      }
    }
  return out;
}

/** "1.5 ms", "12 µs", "3.2 s". */
export function fmtMicros(us: number): string {
  if (us >= 1e6) return `${(us / 1e6).toPrecision(3)} s`;
  if (us >= 1e3) return `${(us / 1e3).toPrecision(3)} ms`;
  return `${Math.round(us)} µs`;
}

/** "512 B", "1.5 KiB", "2.0 MiB". */
export function fmtBytes(b: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) (b /= 1024), i++;
  return i ? `${b.toFixed(1)} ${units[i]}` : `${b} B`;
}
