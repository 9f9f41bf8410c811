// An experiment's description: markdown the server renders and sanitizes
// (frontend-api/httpapi/internal/markdown: an allow list of tags, links
// only to http, https, mailto or relative URLs, no raw HTML), shown as it
// is. The page's Content-Security-Policy (script-src 'self') stands behind
// it: nothing inline would run even if markup slipped through.

import { h } from "./dom";
import type { Experiment } from "./api";

/**
 * The description as an element of the given spec ("div.desc"); its raw
 * text when the server sent no HTML (an older server); null without one.
 */
export function descriptionElement(e: Experiment, spec: `div.${string}` = "div.desc"): HTMLElement | null {
  if (!e.description) return null;
  const el = h(spec);
  el.classList.add("markdown");
  if (e.descriptionHtml) el.innerHTML = e.descriptionHtml; // sanitized by the server
  else el.textContent = e.description;
  return el;
}
