package browsertest

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	cdruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// BenchmarkScalarsFirstChart opens the corpus experiment's Scalars tab in
// a fresh tab and reports, in the page's own clock (ms since navigation
// started): when the first chart had pixels, and when every scalar card
// in the viewport had them.
func BenchmarkScalarsFirstChart(b *testing.B) {
	if env.setupErr != nil {
		b.Fatal(env.setupErr)
	}
	benchFirstChart(b, env.eid)
}

// BenchmarkScalarsFirstChartLarge is the same on the large
// experiment: 100 runs × 20 tags × 10,000 steps (20 million points),
// written through WriteScalar first (not timed).
func BenchmarkScalarsFirstChartLarge(b *testing.B) {
	if env.setupErr != nil {
		b.Fatal(env.setupErr)
	}
	large.once.Do(func() { large.eid, large.err = writeLargeExperiment(100, 20, 10_000) })
	if large.err != nil {
		b.Fatal(large.err)
	}
	benchFirstChart(b, large.eid)
}

var large struct {
	once sync.Once
	eid  string
	err  error
}

// writeLargeExperiment writes runs × tags × steps scalar points through
// the write service's gRPC API (on tbhub serve's port), four requests at
// a time, each one run's tags × 250 steps.
func writeLargeExperiment(runs, tags, steps int) (string, error) {
	w, ctx, done, err := writerClient()
	if err != nil {
		return "", err
	}
	defer done()
	exp, err := w.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: fmt.Sprintf("%d runs x %d tags x %d steps", runs, tags, steps)})
	if err != nil {
		return "", err
	}
	meta := &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "scalars"}, DataClass: tbpb.DataClass_DATA_CLASS_SCALAR}
	const chunk = 250
	type job struct{ run, from int }
	jobs := make(chan job)
	errc := make(chan error, 4)
	for range 4 {
		go func() {
			for j := range jobs {
				rr := &servicepb.WriteScalarRequest_Run{Name: fmt.Sprintf("run%03d", j.run)}
				for t := range tags {
					tag := &servicepb.WriteScalarRequest_Tag{Name: fmt.Sprintf("group%d/metric%02d", t/5, t), Metadata: meta}
					for s := j.from; s < min(j.from+chunk, steps); s++ {
						v := math.Exp(-float64(s)/float64(steps)*(1+float64(j.run%7))) + 0.05*math.Sin(float64(s*(t+1))) + 0.01*float64(j.run)
						tag.Points = append(tag.Points, &servicepb.ScalarPoint{Step: int64(s), Value: v, WallTime: timestamppb.New(time.Unix(1_700_000_000+int64(s)*2+int64(j.run), 0))})
					}
					rr.Tags = append(rr.Tags, tag)
				}
				if _, err := w.WriteScalar(ctx, &servicepb.WriteScalarRequest{ExperimentId: exp.GetExperimentId(), Runs: []*servicepb.WriteScalarRequest_Run{rr}}); err != nil {
					errc <- err
					for range jobs {
					}
					return
				}
			}
			errc <- nil
		}()
	}
	for r := range runs {
		for from := 0; from < steps; from += chunk {
			jobs <- job{r, from}
		}
	}
	close(jobs)
	for range 4 {
		if err := <-errc; err != nil {
			return "", err
		}
	}
	return exp.GetExperimentId(), nil
}

// coldLoads keeps, per experiment, the times of its first page load in
// this process: nothing read before (the embedded store's scalar cache
// empty, Chromium's caches too), where the later loads are warm.
var coldLoads = map[string][2]float64{}

func benchFirstChart(b *testing.B, eid string) {
	var first, all []float64
	defer func() {
		if c, ok := coldLoads[eid]; ok {
			b.ReportMetric(c[0], "cold-first-chart-ms")
			b.ReportMetric(c[1], "cold-all-visible-ms")
		}
	}()
	for i := 0; i < b.N; i++ {
		ctx, cancel := chromedp.NewContext(env.browser)
		var f, a float64
		err := chromedp.Run(ctx,
			navigate(env.origin+"/static/not-there"),
			chromedp.Evaluate(fmt.Sprintf(`localStorage.setItem("tbhub.token", %q)`, env.token), nil),
			navigate(experimentURL(eid, nil)),
			chromedp.Poll(`(`+paintedOnce+`) && [...document.querySelectorAll(".scalar-card canvas")].some(window.__painted) && performance.now()`, &f,
				chromedp.WithPollingInterval(5*time.Millisecond), chromedp.WithPollingTimeout(time.Minute)),
			chromedp.Poll(`(() => {
				const inView = [...document.querySelectorAll(".scalar-card")].filter(c => {
					const r = c.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; });
				return inView.length > 0 && inView.every(c => { const cv = c.querySelector("canvas"); return cv && window.__painted(cv); }) && performance.now();
			})()`, &a, chromedp.WithPollingInterval(5*time.Millisecond), chromedp.WithPollingTimeout(time.Minute)),
		)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := coldLoads[eid]; !ok {
			coldLoads[eid] = [2]float64{f, a}
		}
		first, all = append(first, f), append(all, a)
	}
	b.ReportMetric(median(first), "first-chart-ms")
	b.ReportMetric(median(all), "all-visible-ms")
}

// paintedOnce defines window.__painted(canvas): whether the canvas has at
// least 200 non-transparent pixels. A canvas found painted is remembered
// and not read again, and a read stops at the 200th pixel, so that polling
// every 5 ms takes little of the main thread the page is being timed on
// (reading every pixel of every card's canvas on each poll did).
const paintedOnce = `window.__painted ??= (() => {
	const seen = new WeakSet();
	return (cv) => {
		if (seen.has(cv)) return true;
		if (!cv.width || !cv.height) return false;
		const d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
		let n = 0;
		for (let i = 3; i < d.length; i += 4) if (d[i] !== 0 && ++n >= 200) { seen.add(cv); return true; }
		return false;
	};
})()`

// BenchmarkUPlotMillionPoints measures the chart library alone: uPlot
// (the bundle's version, from node_modules) drawing one line of n points
// into an 800×300 canvas, then panning it: 100 steps of setScale, each
// timed from the call to the end of the redraw it causes.
func BenchmarkUPlotMillionPoints(b *testing.B) {
	if env.setupErr != nil {
		b.Fatal(env.setupErr)
	}
	lib := filepath.Join("..", "..", "..", "frontend-api", "web", "node_modules", "uplot", "dist", "uPlot.iife.min.js")
	if _, err := os.Stat(lib); err != nil {
		b.Fatalf("%v (run scripts/build-ui.sh)", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/uPlot.js", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, lib) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, uplotBenchPage) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var draws, frames []float64
			for i := 0; i < b.N; i++ {
				ctx, cancel := chromedp.NewContext(env.browser)
				var res struct {
					Draw   float64   `json:"draw"`
					Frames []float64 `json:"frames"`
				}
				err := chromedp.Run(ctx,
					navigate(srv.URL+"/"),
					chromedp.Evaluate(fmt.Sprintf(`runBench(%d)`, n), &res, func(p *cdruntime.EvaluateParams) *cdruntime.EvaluateParams { return p.WithAwaitPromise(true) }),
				)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				draws = append(draws, res.Draw)
				frames = append(frames, res.Frames...)
			}
			sort.Float64s(frames)
			b.ReportMetric(median(draws), "first-draw-ms")
			b.ReportMetric(median(frames), "pan-frame-ms")
			b.ReportMetric(frames[len(frames)*95/100], "pan-frame-p95-ms")
		})
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

const uplotBenchPage = `<!doctype html><html><body><script src="/uPlot.js"></script><script>
window.runBench = async (n) => {
  const xs = new Float64Array(n), ys = new Float64Array(n);
  let v = 0;
  for (let i = 0; i < n; i++) { xs[i] = i; v += Math.random() - 0.5; ys[i] = v; }
  let drawn = 0;
  const opts = { width: 800, height: 300, legend: { show: false },
    series: [{}, { stroke: "#1f77b4", width: 1, points: { show: false } }],
    hooks: { draw: [() => drawn++] } };
  const t0 = performance.now();
  const u = new uPlot(opts, [xs, ys], document.body);
  await new Promise(r => queueMicrotask(r));
  const draw = performance.now() - t0;
  const frames = [];
  const span = n / 10;
  for (let k = 0; k < 100; k++) {
    await new Promise(r => requestAnimationFrame(r));
    const before = drawn, t = performance.now();
    const lo = (k * (n - span)) / 100;
    u.setScale("x", { min: lo, max: lo + span });
    await new Promise(r => queueMicrotask(r));
    if (drawn === before) throw new Error("setScale did not redraw");
    frames.push(performance.now() - t);
  }
  return { draw, frames };
};
</script></body></html>`

// writerClient dials the write service on tbhub serve's port as the test user:
// the client, the context carrying the token, and a function that closes it.
func writerClient() (servicepb.TensorBoardWriterServiceClient, context.Context, func(), error) {
	u, err := url.Parse(env.origin)
	if err != nil {
		return nil, nil, nil, err
	}
	conn, err := grpc.NewClient(u.Host, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, nil, err
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+env.token)
	return servicepb.NewTensorBoardWriterServiceClient(conn), ctx, func() { conn.Close() }, nil
}
