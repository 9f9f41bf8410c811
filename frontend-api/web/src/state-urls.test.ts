import { describe, expect, it } from "vitest";
import { formatState, parseState, slideKey } from "./state";

// URLs readers already hold: each must parse to the same state and format back
// to the same query, whatever shape ViewState takes inside.

const DEFAULTS = {
  tab: "",
  runFilter: "",
  off: [],
  colors: {},
  tagFilter: "",
  smoothing: 0.6,
  x: "step",
  logy: false,
  logx: false,
  ignoreOutliers: true,
  zoom: null,
  pin: [],
  expand: [],
  group: "",
  band: "minmax",
  ttsort: "descending",
  tttime: false,
  slides: {},
  hmode: "offset",
  hview: "table",
  hsort: "",
  hfilter: "",
  hx: "",
  hy: "",
  hcolor: "",
  hbrush: [],
  rtag: [],
  rsort: "",
  rfilter: "",
  rgroup: "",
  grun: "",
  ggraph: "",
  gopen: [],
  gnode: "",
  gstats: "",
  gcolor: "",
  ibright: 1,
  icontrast: 1,
  iactual: false,
  tspin: [],
  tsstep: null,
};

const URLS: { name: string; url: string; state: Record<string, unknown> }[] = [
  { name: "no query", url: "", state: {} },
  {
    name: "shared: tab, runs on/off, colours, filters",
    url: "?tab=scalars&runFilter=%5Etrain&off=eval&off=a%2Fb&color=run%7E1%7Eff00aa&tagFilter=loss",
    state: { tab: "scalars", runFilter: "^train", off: ["eval", "a/b"], colors: { "run~1": "#ff00aa" }, tagFilter: "loss" },
  },
  {
    name: "scalars: every option",
    url:
      "?tab=scalars&smoothing=0.9&x=wall&logy=1&logx=1&outliers=0&zoom=10%2C200&pin=loss&pin=acc&expand=loss" +
      "&group=%28lr%3D%5Cd%29&band=std&ttsort=nearest&tttime=1",
    state: {
      tab: "scalars", smoothing: 0.9, x: "wall", logy: true, logx: true, ignoreOutliers: false, zoom: [10, 200],
      pin: ["loss", "acc"], expand: ["loss"], group: "(lr=\\d)", band: "std", ttsort: "nearest", tttime: true,
    },
  },
  {
    name: "media and PR sliders",
    url: "?tab=images&slide=%5B%22images%22%2C%22a%2Fb%22%2C%22r%22%2C30%2C2%5D&slide=%5B%22pr_curves%22%2C%22pr%22%2C%22%22%2C5%2C0%5D&ibright=1.5&icontrast=0.5&iactual=1",
    state: {
      tab: "images",
      slides: { [slideKey("images", "a/b", "r")]: { step: 30, sample: 2 }, [slideKey("pr_curves", "pr", "")]: { step: 5, sample: 0 } },
      ibright: 1.5, icontrast: 0.5, iactual: true,
    },
  },
  {
    name: "histograms and hparams",
    url:
      "?tab=hparams&hmode=overlay&hview=scatter&hsort=-loss&hfilter=adam&hx=lr&hy=loss&hcolor=acc" +
      "&hbrush=%5B%22lr%22%2C0.1%2C0.5%5D&hbrush=%5B%22opt%22%2C%5B%22adam%22%5D%5D",
    state: {
      tab: "hparams", hmode: "overlay", hview: "scatter", hsort: "-loss", hfilter: "adam", hx: "lr", hy: "loss", hcolor: "acc",
      hbrush: ['["lr",0.1,0.5]', '["opt",["adam"]]'],
    },
  },
  {
    name: "runs table",
    url: "?tab=runs&rtag=loss&rtag=eval%2Facc&rsort=-loss.min&rfilter=lr%3D0.1&rgroup=lr",
    state: { tab: "runs", rtag: ["loss", "eval/acc"], rsort: "-loss.min", rfilter: "lr=0.1", rgroup: "lr" },
  },
  {
    name: "graphs",
    url: "?tab=graphs&grun=train&ggraph=op%3Atag&gopen=a%2F&gopen=a%2Fb%2F&gnode=a%2Fb%2Fc&gstats=meta&gcolor=device",
    state: { tab: "graphs", grun: "train", ggraph: "op:tag", gopen: ["a/", "a/b/"], gnode: "a/b/c", gstats: "meta", gcolor: "device" },
  },
  {
    name: "time series",
    url: "?tab=timeseries&tspin=%5B%22scalars%22%2C%22loss%22%2C%22%22%5D&tsstep=-3",
    state: { tab: "timeseries", tspin: ['["scalars","loss",""]'], tsstep: -3 },
  },
];

describe("URLs readers already have", () => {
  for (const c of URLS) {
    it(`${c.name} parses to the same state and formats back unchanged`, () => {
      const s = parseState(c.url);
      expect(s).toEqual({ ...DEFAULTS, ...c.state });
      expect(formatState(s)).toBe(c.url);
    });
  }

  it("reads the old gscope as open scopes and writes them as gopen", () => {
    const s = parseState("?tab=graphs&gscope=a%2Fb%2F");
    expect(s).toEqual({ ...DEFAULTS, tab: "graphs", gopen: ["a/", "a/b/"] });
    expect(formatState(s)).toBe("?tab=graphs&gopen=a%2F&gopen=a%2Fb%2F");
  });

  it("clamps or drops malformed values to their defaults", () => {
    const s = parseState("?smoothing=7&x=sideways&zoom=5%2C1&band=x&hmode=x&hview=x&ibright=99&icontrast=nope&tsstep=1.5&color=r~zzz&ttsort=x");
    expect(s).toEqual({ ...DEFAULTS, smoothing: 0.999, ibright: 5 });
    expect(formatState(s)).toBe("?smoothing=0.999&ibright=5");
    expect(parseState("?smoothing=abc").smoothing).toBe(0.6);
  });
});
