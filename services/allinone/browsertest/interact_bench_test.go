package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/profiler"
	cdruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// BenchmarkScalarsInteract100Runs measures the Scalars tab of an
// experiment of 100 runs × 20 tags × 5,000 steps (the synthetic
// logdir, written through WriteScalar first, not timed) as a reader uses
// it, in the page's own clock: toggling one run off and on in the runs
// list, None and All, 60 mouse moves over the first chart, and a scroll
// through the cards (once while they load, once more when all are drawn).
// An action is timed from just before it to the first animation frame
// after every card in the viewport shows its result (its chart drawn with
// the runs now shown); long tasks (PerformanceObserver "longtask") are
// the longest seen during the action. Scrolling moves the page 40 px per
// frame and reports frames per second and the longest frame.
//
// TBHUB_UI_PROFILE=DIR writes a CPU profile of each phase there
// (hover-N.cpuprofile, ...; build the UI with `npx vite build --minify
// false` for readable names); TBHUB_UI_LOAF=FILE writes the long
// animation frames of the timed actions (script, style and layout, and
// render time of each) as JSON.
func BenchmarkScalarsInteract100Runs(b *testing.B) {
	if env.setupErr != nil {
		b.Fatal(env.setupErr)
	}
	interact.once.Do(func() { interact.eid, interact.err = writeLargeExperiment(100, 20, 5_000) })
	if interact.err != nil {
		b.Fatal(interact.err)
	}
	var all []interactResult
	for i := 0; i < b.N; i++ {
		ctx, cancel := chromedp.NewContext(env.browser)
		var res interactResult
		actions := []chromedp.Action{
			navigate(env.origin + "/static/not-there"),
			chromedp.Evaluate(fmt.Sprintf(`localStorage.setItem("tbhub.token", %q)`, env.token), nil),
			navigate(experimentURL(interact.eid, nil)),
			// Every card in view drawn with its 100 runs.
			inPage(chromedp.Poll(`(`+interactPage+`) && window.__settled(100)`, nil,
				chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute))),
		}
		for _, phase := range []string{"hover", "toggle", "allnone", "scroll"} {
			if dir := os.Getenv("TBHUB_UI_PROFILE"); dir != "" {
				actions = append(actions, profiled(filepath.Join(dir, fmt.Sprintf("%s-%d.cpuprofile", phase, i)), interactPhase(phase, &res)))
			} else {
				actions = append(actions, interactPhase(phase, &res))
			}
		}
		var loaf any
		actions = append(actions, chromedp.Evaluate(`window.__loaf`, &loaf))
		err := chromedp.Run(ctx, actions...)
		if f := os.Getenv("TBHUB_UI_LOAF"); f != "" {
			j, _ := json.Marshal(loaf)
			os.WriteFile(f, j, 0o644)
		}
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, res)
	}
	med := func(f func(r interactResult) float64) float64 {
		v := make([]float64, len(all))
		for i, r := range all {
			v[i] = f(r)
		}
		return median(v)
	}
	b.ReportMetric(med(func(r interactResult) float64 { return (r.Off.MS + r.On.MS) / 2 }), "toggle-ms")
	b.ReportMetric(med(func(r interactResult) float64 { return max(r.Off.Long, r.On.Long) }), "toggle-longtask-ms")
	b.ReportMetric(med(func(r interactResult) float64 { return r.None.MS }), "none-ms")
	b.ReportMetric(med(func(r interactResult) float64 { return r.All.MS }), "all-ms")
	b.ReportMetric(med(func(r interactResult) float64 { return max(r.None.Long, r.All.Long) }), "allnone-longtask-ms")
	b.ReportMetric(med(func(r interactResult) float64 { return r.Hover.Total }), "hover60-total-ms")
	b.ReportMetric(med(func(r interactResult) float64 { return r.Hover.Median }), "hover-median-ms")
	b.ReportMetric(med(func(r interactResult) float64 { return r.Hover.Max }), "hover-max-ms")
	b.ReportMetric(med(func(r interactResult) float64 { return r.Hover.Long }), "hover-longtask-ms")
	b.ReportMetric(med(func(r interactResult) float64 { return r.Scroll.FPS }), "scroll-load-fps")
	b.ReportMetric(med(func(r interactResult) float64 { return r.Scroll.Worst }), "scroll-load-worst-ms")
	b.ReportMetric(med(func(r interactResult) float64 { return r.Rescroll.FPS }), "scroll-fps")
	b.ReportMetric(med(func(r interactResult) float64 { return r.Rescroll.Worst }), "scroll-worst-ms")
}

// interactPhase runs one phase of __interact, its results merged into res.
func interactPhase(phase string, res *interactResult) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`window.__interact(%q)`, phase), res, func(p *cdruntime.EvaluateParams) *cdruntime.EvaluateParams { return p.WithAwaitPromise(true) })
}

// profiled runs a under Chromium's JavaScript sampling profiler and writes
// the profile to file (open it in Chromium's DevTools, Performance tab).
// TBHUB_UI_PROFILE=DIR makes the benchmark profile each phase.
func profiled(file string, a chromedp.Action) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		if err := profiler.Enable().Do(ctx); err != nil {
			return err
		}
		if err := profiler.SetSamplingInterval(200).Do(ctx); err != nil {
			return err
		}
		if err := profiler.Start().Do(ctx); err != nil {
			return err
		}
		if err := a.Do(ctx); err != nil {
			return err
		}
		prof, err := profiler.Stop().Do(ctx)
		if err != nil {
			return err
		}
		b, err := json.Marshal(prof)
		if err != nil {
			return err
		}
		return os.WriteFile(file, b, 0o644)
	})
}

var interact struct {
	once sync.Once
	eid  string
	err  error
}

type interactTiming struct {
	MS   float64 `json:"ms"`
	Long float64 `json:"long"`
}

type interactResult struct {
	Off, On, None, All interactTiming
	Hover              struct {
		Total, Median, Max, Long float64
	}
	Scroll, Rescroll struct {
		FPS, Worst float64
	}
}

// interactPage (an expression) defines the benchmark's page side: __settled(n) (every
// scalar card in view drawn with n runs; n = 0: no card left) and
// __interact() (the timed actions, in order, answering interactResult).
const interactPage = `window.__settled ??= (n) => {
	const cards = [...document.querySelectorAll(".scalar-card")];
	if (n === 0) return cards.length === 0;
	const inView = cards.filter(c => { const r = c.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; });
	return inView.length > 0 && inView.every(c => {
		const ch = c.querySelector(".chart");
		return ch && ch.querySelector("canvas") && ch.dataset.runs === String(n);
	});
},
window.__interact ??= async (phase) => {
	const frame = () => new Promise(r => requestAnimationFrame(r));
	const longTasks = () => {
		const seen = [];
		const po = new PerformanceObserver(l => seen.push(...l.getEntries()));
		po.observe({ type: "longtask" });
		const frames = [];
		const lo = new PerformanceObserver(l => frames.push(...l.getEntries()));
		lo.observe({ type: "long-animation-frame" });
		return () => {
			seen.push(...po.takeRecords()); po.disconnect();
			frames.push(...lo.takeRecords()); lo.disconnect();
			window.__loaf = (window.__loaf || []).concat(frames.map(f => ({ dur: Math.round(f.duration), work: Math.round(f.renderStart ? f.renderStart - f.startTime : f.duration),
				style: Math.round(f.styleAndLayoutStart ? f.startTime + f.duration - f.styleAndLayoutStart : 0), render: Math.round(f.renderStart ? f.startTime + f.duration - f.renderStart : 0),
				scripts: f.scripts.map(s => s.invoker + ":" + Math.round(s.duration) + "/forced " + Math.round(s.forcedStyleAndLayoutDuration)).join(", ") })));
			return Math.max(0, ...seen.map(e => e.duration));
		};
	};
	// action, then frames until every card in view shows n runs.
	const timed = async (action, n) => {
		const stop = longTasks();
		const t0 = performance.now();
		action();
		do await frame(); while (!window.__settled(n));
		const ms = performance.now() - t0;
		return { ms, long: stop() };
	};
	const box = (run) => document.querySelector('.runs li[data-run="' + run + '"] input[type=checkbox]');
	const button = (text) => [...document.querySelectorAll(".run-buttons button")].find(b => b.textContent === text);
	const res = {};
	if (phase === "hover") {
	// 60 mouse moves across the first chart, each to the next frame.
	const over = document.querySelector(".scalar-card .u-over");
	const r = over.getBoundingClientRect();
	const hovers = [];
	let stop = longTasks();
	await frame();
	for (let i = 0; i < 60; i++) {
		const t = performance.now();
		over.dispatchEvent(new MouseEvent("mousemove", { bubbles: true, clientX: r.left + 5 + (r.width - 10) * i / 59, clientY: r.top + r.height * (0.3 + 0.4 * (i % 7) / 6) }));
		await frame();
		hovers.push(performance.now() - t);
	}
	over.dispatchEvent(new MouseEvent("mouseleave", { bubbles: false }));
	const hoverLong = stop();
	const sorted = [...hovers].sort((a, b) => a - b);
	res.Hover = { Total: hovers.reduce((a, b) => a + b, 0), Median: sorted[30], Max: sorted[59], Long: hoverLong };
	}
	if (phase === "toggle") {
		res.Off = await timed(() => box("run000").click(), 99);
		res.On = await timed(() => box("run000").click(), 100);
	}
	if (phase === "allnone") {
		res.None = await timed(() => button("None").click(), 0);
		res.All = await timed(() => button("All").click(), 100);
	}
	if (phase !== "scroll") return res;

	// Scrolling: 40 px a frame to the bottom, then frames until the cards
	// in view are drawn (the first pass: cards read and drawn as they come
	// in); then back to the top (cards whose data came while they were
	// out of view are drawn as they come in again).
	const scroll = async (dir, untilDrawn) => {
		const gaps = [];
		let last = await frame();
		const end = () => dir > 0 ? scrollY + innerHeight >= document.documentElement.scrollHeight - 1 : scrollY <= 0;
		let t0 = last;
		while (!end() || (untilDrawn && !window.__settled(100))) {
			if (!end()) scrollBy(0, 40 * dir);
			const now = await frame();
			gaps.push(now - last);
			last = now;
			if (gaps.length > 5000) throw new Error("scroll did not finish");
		}
		const total = last - t0;
		return { FPS: gaps.length / (total / 1000), Worst: Math.max(...gaps) };
	};
	scrollTo(0, 0);
	await frame();
	res.Scroll = await scroll(1, true);
	res.Rescroll = await scroll(-1, false);
	return res;
}`
