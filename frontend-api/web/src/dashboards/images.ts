// Images and audio: one card per (tag, run) with a step slider. Bytes are
// fetched with the caller's token into object URLs (see api.blobURL);
// click an image for its full size.

import { blobURL, getJSON, type RunTagIndex } from "../api";
import { h } from "../dom";
import { slideKey } from "../state";
import { notice, rangeSlider, runTagDashboard, saveSlide, stepIndex, stepSlider, type Dashboard, type DashboardContext } from "./dashboard";

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
  const img = h("img", { src, alt });
  // Large and centred: a small image scaled up by a whole factor (crisp,
  // nearest-neighbour), a large one scaled down to fit.
  const fit = () => {
    const k = Math.min((innerWidth * 0.9) / img.naturalWidth, (innerHeight * 0.9) / img.naturalHeight);
    if (!Number.isFinite(k) || k <= 0) return;
    const scale = k >= 2 ? Math.floor(k) : Math.min(k, 1);
    img.style.width = `${Math.round(img.naturalWidth * scale)}px`;
    img.style.height = `${Math.round(img.naturalHeight * scale)}px`;
    img.style.imageRendering = scale > 1 ? "pixelated" : "auto";
  };
  if (img.complete && img.naturalWidth) fit();
  else img.addEventListener("load", fit);
  const overlay = h("div.overlay", { onclick: close, role: "dialog", "aria-label": alt }, img);
  document.addEventListener("keydown", onKey);
  document.body.appendChild(overlay);
}

/**
 * Fills a card with el (an <img> or <audio>) showing one sample of one step:
 * a step slider, starting at the last step, and for steps of several samples a
 * sample slider. A sample's list of steps is asked for when it is chosen (a step
 * may hold fewer samples than others); the shown step stays where it can.
 * Both sliders are in the URL (slide), the latest step of sample 0 left out.
 */
async function fillMedia(ctx: DashboardContext, plugin: "images" | "audio", body: HTMLElement, run: string, tag: string, samples: number | undefined, el: HTMLImageElement | HTMLAudioElement) {
  const load = (sample: number) => getJSON<MediaEntry[]>(ctx.api.plugin(plugin, plugin, { run, tag, sample }));
  const n = samples ?? 1;
  const key = slideKey(plugin, tag, run);
  const saved = ctx.store.get().slides[key];
  let sample = saved && saved.sample < n ? saved.sample : 0;
  let list = await load(sample);
  if (!list.length && sample > 0) list = await load((sample = 0));
  if (!list.length) {
    body.appendChild(notice("No samples."));
    return;
  }
  const route = ctx.api.plugin(plugin, plugin === "images" ? "individualImage" : "individualAudio");
  let index = saved ? stepIndex(list.map((e) => e.step), saved.step) : list.length - 1;
  const remember = () => saveSlide(ctx.store, key, index === list.length - 1 && sample === 0 ? null : { step: list[index].step, sample });
  let shown = 0; // the latest request wins when the sliders move quickly
  const show = async () => {
    const mine = ++shown;
    const url = await blobURL(route + "?" + list[index].query);
    if (mine === shown) el.src = url;
  };
  const steps = () => stepSlider(list.map((e) => e.step), (i) => {
    index = i;
    remember();
    void show();
  }, index);
  let slider = steps();
  body.append(h("div.media", null, el), slider);
  if (n > 1) {
    body.appendChild(rangeSlider(n, "sample", (k) => `sample ${k + 1} of ${n}`, async (k) => {
      const step = list[index].step;
      const next = await load(k);
      if (!next.length) return;
      list = next;
      sample = k;
      const same = list.findIndex((e) => e.step === step);
      index = same >= 0 ? same : list.length - 1;
      const fresh = steps();
      slider.replaceWith(fresh);
      slider = fresh;
      remember();
      await show();
    }, sample));
  }
  await show();
}

/** A dashboard of media cards of plugin, each showing its samples in el(run, tag). */
function mediaDashboard(el: HTMLElement, ctx: DashboardContext, plugin: "images" | "audio", media: (run: string, tag: string) => HTMLImageElement | HTMLAudioElement): Dashboard {
  return runTagDashboard(el, ctx, {
    cardClass: plugin === "images" ? "image-card" : "audio-card",
    empty: `No ${plugin} for the shown runs and tags.`,
    tags: () => getJSON<RunTagIndex>(ctx.api.plugin(plugin, "tags")),
    fill: (body, run, tag, info) => fillMedia(ctx, plugin, body, run, tag, info.samples, media(run, tag)),
  });
}

export function imagesDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  return mediaDashboard(el, ctx, "images", (run, tag) => {
    const img = h("img.sample", { alt: `${tag} (${run})`, title: "Click for full size" });
    img.addEventListener("click", () => img.src && fullSize(img.src, img.alt));
    return img;
  });
}

export function audioDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  return mediaDashboard(el, ctx, "audio", (run, tag) => h("audio", { controls: true, preload: "auto", "aria-label": `${tag} (${run})` }));
}
