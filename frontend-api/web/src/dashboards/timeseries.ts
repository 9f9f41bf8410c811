// The Time Series view, TensorBoard's default dashboard: the scalars,
// histograms and images of each tag together on one scrolling page of
// cards, pinned cards at the top (tspin in the URL), and a global step
// (tsstep) that the image and histogram cards show. The cards are the
// other dashboards' renderers: scalarLines on a LineChart, fillHistogram,
// fillMedia.

import { getJSON, postForm, type ScalarDatum } from "../api";
import { LineChart } from "../charts/linechart";
import { compileFilter, debounce, h, setChildren } from "../dom";
import { toggled, type ViewState } from "../state";
import { cardRun, groupByPrefix, notice, fillWhenVisible, rangeSlider, runsChanged, shownRuns, stepIndex, type Dashboard, type DashboardContext } from "./dashboard";
import { fillHistogram } from "./histograms";
import { fillMedia, sampleImage } from "./images";
import { imageFilter } from "./imageview";
import { samplesFor, scalarLines } from "./scalars-model";
import { globalSteps, timeSeriesCards, type TimeSeriesCard, type TimeSeriesTags } from "./timeseries-model";

/**
 * The cards by tag prefix; tags without a "/" (each its own prefix) share
 * one group instead of a section and a row each.
 */
function groupsOf(cards: TimeSeriesCard[]): [string, TimeSeriesCard[]][] {
  const groups = [...groupByPrefix(cards, (c) => c.tag)];
  const lone = groups.filter(([, items]) => !items[0].tag.includes("/"));
  if (lone.length < 2) return groups;
  return [["(no prefix)", lone.flatMap(([, items]) => items)], ...groups.filter((g) => !lone.includes(g))];
}

const CARD_CLASS = { scalars: "scalar-card", histograms: "histogram-card", images: "image-card" } as const;

export function timeSeriesDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  const { api, store } = ctx;
  const tagFilter = h("input", { type: "search", placeholder: "Filter tags (regex)", "aria-label": "tag filter", className: "tag-filter" });
  tagFilter.addEventListener("input", debounce(() => store.set({ tagFilter: tagFilter.value }), 200));
  const stepHost = h("label.global-step", { title: "The step the image and histogram cards show" });
  const content = h("div.cards");
  setChildren(el, h("div.toolbar", null, h("label", null, "Tags ", tagFilter), stepHost), content);

  let index: TimeSeriesTags | null = null;
  let stops: (() => void)[] = [];
  const charts: LineChart[] = [];
  // The steps of each loaded image and histogram card (the global slider's
  // steps), and how to draw it again at another global step.
  const stepsOf = new Map<string, number[]>();
  const redrawAtStep = new Map<string, () => void>();

  // Drawn again only when the steps change (not under a dragging pointer).
  let drawnSteps = "";
  function drawStepSlider() {
    const steps = globalSteps(stepsOf.values());
    if (steps.join() === drawnSteps) return;
    drawnSteps = steps.join();
    const at = store.get().tsstep;
    const i = at === null ? steps.length - 1 : stepIndex(steps, at);
    stepHost.replaceChildren(
      "Global step ",
      rangeSlider(steps.length, "global-step", (k) => (!steps.length ? "" : k === steps.length - 1 && at === null ? `step ${steps[k]} (latest)` : `step ${steps[k]}`), (k) => {
        store.set({ tsstep: k === steps.length - 1 ? null : steps[k] });
      }, Math.max(i, 0)),
    );
  }
  const drawStepSliderSoon = debounce(drawStepSlider, 100);

  async function fill(c: TimeSeriesCard, body: HTMLElement) {
    const s = store.get();
    if (c.kind === "scalars") {
      const shown = shownRuns(ctx, s);
      const runs = Object.entries(index?.scalars?.runTagInfo ?? {})
        .filter(([run, tags]) => tags.includes(c.tag) && shown.has(run))
        .map(([run]) => run);
      const form = new URLSearchParams({ tag: c.tag, samples: String(samplesFor(body.clientWidth)) });
      for (const r of runs) form.append("runs", r);
      const data = await postForm<Record<string, ScalarDatum[]>>(api.plugin("scalars", "scalars_multirun"), form);
      const lines = scalarLines(data, runs, ctx.colorOf, s);
      if (!lines.length) {
        body.appendChild(notice("No data for the shown runs."));
        return;
      }
      const chartEl = h("div.chart");
      body.appendChild(chartEl);
      charts.push(new LineChart(chartEl, { lines, xKind: s.x, logy: s.logy, tooltipSort: s.ttsort }));
      return;
    }
    const steps =
      c.kind === "histograms"
        ? await fillHistogram(ctx, body, c.run, c.tag, s.tsstep)
        : await fillMedia(ctx, "images", body, c.run, c.tag, c.samples, sampleImage(c.run, c.tag), s.tsstep);
    body.dataset.step = String(s.tsstep === null ? steps.at(-1) : steps[stepIndex(steps, s.tsstep)]);
    stepsOf.set(c.key, steps);
    redrawAtStep.set(c.key, () => {
      body.replaceChildren();
      void fill(c, body).catch((e) => body.replaceChildren(notice((e as Error).message, "error")));
    });
    drawStepSliderSoon();
  }

  function card(c: TimeSeriesCard, pinned: boolean): HTMLElement {
    const body = h("div.card-body", null, "Loading…");
    const pin = h(
      "button.icon",
      {
        className: "icon pin",
        title: pinned ? "Unpin" : "Pin to the top",
        "aria-pressed": String(pinned),
        onclick: () => store.set({ tspin: toggled(store.get().tspin, c.key) }),
      },
      pinned ? "★" : "☆",
    );
    const el = h(
      "div.card",
      { className: `card ts-card ${CARD_CLASS[c.kind]}`, "data-kind": c.kind, "data-tag": c.tag, "data-run": c.run, "data-key": c.key },
      h(
        "div.card-head",
        null,
        h("span.card-title", { title: c.tag }, c.tag),
        c.run ? cardRun(ctx, c.run) : null,
        pin,
      ),
      body,
    );
    stops.push(fillWhenVisible(el, body, () => fill(c, body)));
    return el;
  }

  function layout() {
    for (const stop of stops) stop();
    stops = [];
    for (const c of charts.splice(0)) c.destroy();
    redrawAtStep.clear();
    if (!index) return;
    const s = store.get();
    if (document.activeElement !== tagFilter) tagFilter.value = s.tagFilter;
    const { pinned, cards } = timeSeriesCards(index, shownRuns(ctx, s), compileFilter(s.tagFilter), ctx.runs.map((r) => r.name), s.tspin);
    if (!pinned.length && !cards.length) {
      setChildren(content, notice("No scalars, histograms or images for the shown runs and tags."));
      return;
    }
    setChildren(
      content,
      pinned.length ? h("section.group.pinned", null, h("h3", null, "Pinned"), h("div.grid", null, pinned.map((c) => card(c, true)))) : null,
      groupsOf(cards).map(([prefix, group]) =>
        h("details.group", { open: true }, h("summary", null, prefix, h("span.count", null, ` ${group.length}`)), h("div.grid", null, group.map((c) => card(c, false)))),
      ),
    );
  }

  function applyImageLook(s: ViewState) {
    el.style.setProperty("--image-filter", imageFilter(s.ibright, s.icontrast) || "none");
  }

  applyImageLook(store.get());
  content.appendChild(notice("Loading…"));
  getJSON<TimeSeriesTags>(api.plugin("timeseries", "tags"))
    .then((idx) => {
      index = idx;
      layout();
    })
    .catch((e) => setChildren(content, notice(e.message, "error")));

  const redrawSteps = debounce(() => {
    for (const redraw of redrawAtStep.values()) redraw();
  }, 150);

  return {
    update(s, prev) {
      applyImageLook(s);
      if (
        runsChanged(s, prev) ||
        s.tagFilter !== prev.tagFilter ||
        s.tspin.join("\n") !== prev.tspin.join("\n") ||
        s.smoothing !== prev.smoothing ||
        s.x !== prev.x ||
        s.logy !== prev.logy ||
        s.hmode !== prev.hmode
      ) {
        layout();
      } else if (s.tsstep !== prev.tsstep) {
        redrawSteps();
      }
    },
    destroy() {
      for (const stop of stops) stop();
      for (const c of charts) c.destroy();
    },
  };
}
