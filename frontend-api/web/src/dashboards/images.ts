// Images and audio: one card per (tag, run) with a step slider. Bytes are
// fetched with the caller's token into object URLs (see api.blobURL);
// click an image for its full size.

import { blobURL, getJSON, type RunTagIndex } from "../api";
import { h } from "../dom";
import { notice, runTagDashboard, stepSlider, type Dashboard, type DashboardContext } from "./dashboard";

interface MediaEntry {
  wall_time: number;
  step: number;
  query: string;
}

/** Shows an image at its natural size over the page until clicked or Escape. */
function fullSize(src: string, alt: string) {
  const close = () => {
    overlay.remove();
    document.removeEventListener("keydown", onKey);
  };
  const onKey = (e: KeyboardEvent) => e.key === "Escape" && close();
  const overlay = h("div.overlay", { onclick: close, role: "dialog", "aria-label": alt }, h("img", { src, alt }));
  document.addEventListener("keydown", onKey);
  document.body.appendChild(overlay);
}

/**
 * Fills a card with el (an <img> or <audio>) showing sample 0 of a step
 * (a step with more samples shows its first) and a step slider, starting
 * at the last step.
 */
async function fillMedia(ctx: DashboardContext, plugin: "images" | "audio", body: HTMLElement, run: string, tag: string, samples: number | undefined, el: HTMLImageElement | HTMLAudioElement) {
  const list = await getJSON<MediaEntry[]>(ctx.api.plugin(plugin, plugin, { run, tag, sample: 0 }));
  if (!list.length) {
    body.appendChild(notice("No samples."));
    return;
  }
  if ((samples ?? 1) > 1) body.appendChild(h("div.hint", null, `${samples} samples per step; showing the first`));
  const route = ctx.api.plugin(plugin, plugin === "images" ? "individualImage" : "individualAudio");
  const show = async (i: number) => {
    el.src = await blobURL(route + "?" + list[i].query);
  };
  body.append(h("div.media", null, el), stepSlider(list.map((e) => e.step), show));
  await show(list.length - 1);
}

export function imagesDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  return runTagDashboard(el, ctx, {
    cardClass: "image-card",
    empty: "No images for the shown runs and tags.",
    tags: () => getJSON<RunTagIndex>(ctx.api.plugin("images", "tags")),
    fill(body, run, tag, info) {
      const img = h("img.sample", { alt: `${tag} (${run})`, title: "Click for full size" });
      img.addEventListener("click", () => img.src && fullSize(img.src, img.alt));
      return fillMedia(ctx, "images", body, run, tag, info.samples, img);
    },
  });
}

export function audioDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  return runTagDashboard(el, ctx, {
    cardClass: "audio-card",
    empty: "No audio for the shown runs and tags.",
    tags: () => getJSON<RunTagIndex>(ctx.api.plugin("audio", "tags")),
    fill(body, run, tag, info) {
      const audio = h("audio", { controls: true, preload: "auto", "aria-label": `${tag} (${run})` });
      return fillMedia(ctx, "audio", body, run, tag, info.samples, audio);
    },
  });
}
