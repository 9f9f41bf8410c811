// Images and audio: one card per (tag, run) with a step slider. Bytes are
// fetched with the caller's token into object URLs (see api.blobURL);
// click an image for the lightbox. Brightness, contrast and actual size
// (toolbar, in the URL) apply to every image.

import { blobURL, getJSON, type RunTagIndex } from "../api";
import { h } from "../dom";
import { slideKey, type ViewState } from "../state";
import { lightboxCaption, lightboxMove, type LightboxPos, imageFilter, BRIGHTNESS, CONTRAST } from "./imageview";
import { notice, rangeSlider, runTagDashboard, saveSlide, stepIndex, stepSlider, type Dashboard, type DashboardContext } from "./dashboard";

interface MediaEntry {
  wall_time: number;
  step: number;
  query: string;
}

/** What a lightbox shows: one image card's samples, step by step. */
interface LightboxSource {
  run: string;
  tag: string;
  samples: number;
  /** The card's steps of one sample. */
  load: (sample: number) => Promise<MediaEntry[]>;
  /** An image's bytes as an object URL. */
  url: (e: MediaEntry) => Promise<string>;
}

/**
 * Shows an image large over the page, named by run, tag and step, until
 * clicked or Escape: ←/→ step through the card's steps, ↑/↓ through the
 * images of a step. The images' brightness and contrast apply (filter).
 */
function lightbox(src: LightboxSource, list: MediaEntry[], pos: LightboxPos, filter: string, actualSize: boolean) {
  const close = () => {
    overlay.remove();
    document.removeEventListener("keydown", onKey);
  };
  const img = h("img", { alt: `${src.tag} (${src.run})`, style: { filter } });
  const caption = h("div.lightbox-caption", { role: "status" });
  // Large and centred: a small image scaled up by a whole factor (crisp,
  // nearest-neighbour), a large one scaled down to fit; at actual size, as stored.
  const fit = () => {
    const k = Math.min((innerWidth * 0.9) / img.naturalWidth, (innerHeight * 0.85) / img.naturalHeight);
    if (!Number.isFinite(k) || k <= 0) return;
    const scale = actualSize ? 1 : k >= 2 ? Math.floor(k) : Math.min(k, 1);
    img.style.width = `${Math.round(img.naturalWidth * scale)}px`;
    img.style.height = `${Math.round(img.naturalHeight * scale)}px`;
    img.style.imageRendering = scale > 1 ? "pixelated" : "auto";
  };
  img.addEventListener("load", fit);
  let shown = 0; // the latest move wins
  const show = async () => {
    const mine = ++shown;
    const e = list[pos.index];
    const url = await src.url(e);
    if (mine !== shown) return;
    img.src = url;
    overlay.dataset.step = String(e.step);
    overlay.dataset.sample = String(pos.sample);
    caption.textContent = lightboxCaption(src.run, src.tag, e.step, pos.sample, src.samples);
  };
  const move = async (key: string) => {
    const next = lightboxMove(pos, key, list.length, src.samples);
    if (!next) return;
    if (next.sample !== pos.sample) {
      const step = list[pos.index].step;
      const other = await src.load(next.sample);
      if (!other.length) return;
      list = other;
      next.index = stepIndex(list.map((e) => e.step), step);
    }
    pos = next;
    await show();
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === "Escape") close();
    else if (["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End"].includes(e.key)) {
      e.preventDefault();
      void move(e.key);
    }
  };
  const button = (label: string, key: string, title: string) =>
    h("button.lightbox-nav", { type: "button", title, "aria-label": title, "data-key": key, onclick: (e: Event) => (e.stopPropagation(), void move(key)) }, label);
  const overlay = h(
    "div.overlay.lightbox",
    { onclick: close, role: "dialog", "aria-label": img.alt },
    h("div.lightbox-bar", null, button("←", "ArrowLeft", "previous step (←)"), caption, button("→", "ArrowRight", "next step (→)")),
    img,
  );
  document.addEventListener("keydown", onKey);
  document.body.appendChild(overlay);
  void show();
}

/**
 * Fills a card with el (an <img> or <audio>) showing one sample of one step:
 * a step slider, starting at the last step, and for steps of several samples a
 * sample slider. A sample's list of steps is asked for when it is chosen (a step
 * may hold fewer samples than others); the shown step stays where it can.
 * Both sliders are in the URL (slide), the latest step of sample 0 left out.
 */
export async function fillMedia(
  ctx: DashboardContext,
  plugin: "images" | "audio",
  body: HTMLElement,
  run: string,
  tag: string,
  samples: number | undefined,
  el: HTMLImageElement | HTMLAudioElement,
  atStep: number | null = null,
): Promise<number[]> {
  const load = (sample: number) => getJSON<MediaEntry[]>(ctx.api.plugin(plugin, plugin, { run, tag, sample }));
  const n = samples ?? 1;
  const key = slideKey(plugin, tag, run);
  const saved = ctx.store.get().slides[key];
  let sample = saved && saved.sample < n ? saved.sample : 0;
  let list = await load(sample);
  if (!list.length && sample > 0) list = await load((sample = 0));
  if (!list.length) {
    body.appendChild(notice("No samples."));
    return [];
  }
  const route = ctx.api.plugin(plugin, plugin === "images" ? "individualImage" : "individualAudio");
  const startAt = atStep ?? saved?.step;
  let index = startAt !== undefined ? stepIndex(list.map((e) => e.step), startAt) : list.length - 1;
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
  if (el instanceof HTMLImageElement) {
    const src: LightboxSource = { run, tag, samples: n, load, url: (e) => blobURL(route + "?" + e.query) };
    el.addEventListener("click", () => {
      const s = ctx.store.get();
      lightbox(src, list, { index, sample }, imageFilter(s.ibright, s.icontrast), s.iactual);
    });
  }
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
  return list.map((e) => e.step);
}

/** An image card's <img>: click it for the lightbox. */
export function sampleImage(run: string, tag: string): HTMLImageElement {
  return h("img.sample", { alt: `${tag} (${run})`, title: "Click to enlarge (←/→: steps)" });
}

/** A dashboard of media cards of plugin, each showing its samples in el(run, tag). */
function mediaDashboard(el: HTMLElement, ctx: DashboardContext, plugin: "images" | "audio", media: (run: string, tag: string) => HTMLImageElement | HTMLAudioElement, controls?: HTMLElement[]): Dashboard {
  return runTagDashboard(el, ctx, {
    controls,
    cardClass: plugin === "images" ? "image-card" : "audio-card",
    empty: `No ${plugin} for the shown runs and tags.`,
    tags: () => getJSON<RunTagIndex>(ctx.api.plugin(plugin, "tags")),
    fill: async (body, run, tag, info) => {
      await fillMedia(ctx, plugin, body, run, tag, info.samples, media(run, tag));
    },
  });
}

export function imagesDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  const { store } = ctx;
  const level = (name: string, range: typeof BRIGHTNESS, key: "ibright" | "icontrast") => {
    const input = h("input", {
      type: "range", min: range.min, max: range.max, step: range.step, value: store.get()[key], "aria-label": name, className: `image-${name}`,
      oninput: () => store.set({ [key]: Number(input.value) }),
    });
    return { input, label: h("label", { title: `${name} of every image (1: as stored)` }, name[0].toUpperCase() + name.slice(1), input) };
  };
  const bright = level("brightness", BRIGHTNESS, "ibright");
  const contrast = level("contrast", CONTRAST, "icontrast");
  const actual = h("input", { type: "checkbox", className: "image-actual", onchange: () => store.set({ iactual: actual.checked }) });
  const reset = h("button", { type: "button", title: "Brightness and contrast as stored", onclick: () => store.set({ ibright: 1, icontrast: 1 }) }, "Reset");
  const apply = (s: ViewState) => {
    // A CSS variable on the dashboard: every card's image follows it.
    el.style.setProperty("--image-filter", imageFilter(s.ibright, s.icontrast) || "none");
    el.classList.toggle("images-actual-size", s.iactual);
    bright.input.value = String(s.ibright);
    contrast.input.value = String(s.icontrast);
    actual.checked = s.iactual;
  };
  const dash = mediaDashboard(el, ctx, "images", sampleImage, [
    bright.label,
    contrast.label,
    reset,
    h("label", { title: "Each image at its stored size, not fitted to its card" }, actual, "Actual size"),
  ]);
  apply(store.get());
  return {
    ...dash,
    update(s, prev) {
      apply(s);
      dash.update(s, prev);
    },
  };
}

export function audioDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  return mediaDashboard(el, ctx, "audio", (run, tag) => h("audio", { controls: true, preload: "auto", "aria-label": `${tag} (${run})` }));
}
