// Text: one card per (tag, run) listing its steps, newest first. The
// server renders markdown to sanitized HTML (httpapi's markdown.go); the
// page's Content-Security-Policy forbids inline scripts as a second line
// of defence.

import { getJSON } from "../api";
import { h } from "../dom";
import { notice, runTagDashboard, type Dashboard, type DashboardContext } from "./dashboard";

interface TextEntry {
  wall_time: number;
  step: number;
  text: string;
}

export function textDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  return runTagDashboard(el, ctx, {
    cardClass: "text-card",
    wide: true,
    empty: "No text for the shown runs and tags.",
    async tags() {
      const idx = await getJSON<Record<string, string[]>>(ctx.api.plugin("text", "tags"));
      return Object.fromEntries(Object.entries(idx).map(([run, tags]) => [run, Object.fromEntries(tags.map((t) => [t, {}]))]));
    },
    async fill(body, run, tag) {
      const list = await getJSON<TextEntry[]>(ctx.api.plugin("text", "text", { run, tag, markdown: true }));
      if (!list.length) body.appendChild(notice("No text."));
      for (const e of list.slice().reverse()) {
        const html = h("div.markdown");
        html.innerHTML = e.text; // sanitized by the server
        body.appendChild(h("div.text-step", null, h("div.step-label", null, `step ${e.step}`), html));
      }
    },
  });
}
