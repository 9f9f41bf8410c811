package browsertest

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	cdruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"google.golang.org/protobuf/types/known/timestamppb"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
)

// pageErrors collects the exceptions the tab's pages throw and nobody
// catches (the "pageerror"s of other tools); call the function it returns
// to read them.
func pageErrors(ctx context.Context) func() []string {
	var mu sync.Mutex
	var errs []string
	chromedp.ListenTarget(ctx, func(ev any) {
		e, ok := ev.(*cdruntime.EventExceptionThrown)
		if !ok {
			return
		}
		msg := e.ExceptionDetails.Text
		if x := e.ExceptionDetails.Exception; x != nil {
			msg += " " + x.Description
		}
		mu.Lock()
		errs = append(errs, msg)
		mu.Unlock()
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// writeScalars writes one run's scalar series (tag → values at steps 0, 1,
// …; wall times a second apart) into a new experiment, and returns its id.
// Long series go in requests of 20,000 points (the write service takes
// 1 MiB per request).
func writeScalars(t *testing.T, name, run string, series map[string][]float64) string {
	t.Helper()
	requireEnv(t)
	w, ctx, done, err := writerClient()
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	exp, err := w.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	meta := &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "scalars"}, DataClass: tbpb.DataClass_DATA_CLASS_SCALAR}
	const perRequest = 20_000
	for tag, values := range series {
		for start := 0; start < len(values); start += perRequest {
			st := &servicepb.WriteScalarRequest_Tag{Name: tag, Metadata: meta}
			for s := start; s < min(len(values), start+perRequest); s++ {
				st.Points = append(st.Points, &servicepb.ScalarPoint{Step: int64(s), Value: values[s], WallTime: timestamppb.New(time.Unix(1_700_000_000+int64(s), 0))})
			}
			rr := &servicepb.WriteScalarRequest_Run{Name: run, Tags: []*servicepb.WriteScalarRequest_Tag{st}}
			if _, err := w.WriteScalar(ctx, &servicepb.WriteScalarRequest{ExperimentId: exp.GetExperimentId(), Runs: []*servicepb.WriteScalarRequest_Run{rr}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return exp.GetExperimentId()
}

// Log y on a series with negative values draws its positive part: a
// gain positive for 50 steps, then 0 for 250, -1 for 260, then positive
// again. Smoothed, the zeros decay the line towards 0 (0.6^250 ≈ 1e-56),
// which took uPlot's log ticks into an endless loop: "RangeError: Invalid
// array length" and an empty card, on step and wall x axes alike.
func TestScalarsLogYOnNegativeValuesDrawsPositivePart(t *testing.T) {
	gain := make([]float64, 600)
	for s := range gain {
		switch {
		case s < 50:
			gain[s] = 1 + float64(s)/10
		case s < 300:
			gain[s] = 0
		case s < 560:
			gain[s] = -1
		default:
			gain[s] = float64(s - 559)
		}
	}
	eid := writeScalars(t, "log y on negative values", "r", map[string][]float64{"gain": gain})
	for _, x := range []string{"step", "wall"} {
		t.Run(x, func(t *testing.T) {
			ctx := tab(t, true)
			errs := pageErrors(ctx)
			card := `.scalar-card[data-tag="gain"]`
			var note, ticks, failed string
			var coloured int
			run(t, ctx,
				navigate(experimentURL(eid, url.Values{"logy": {"1"}, "x": {x}, "smoothing": {"0.6"}})),
				waitFor(`document.querySelector('`+card+` .log-gaps') !== null || document.querySelector('`+card+` .error') !== null`),
				chromedp.Evaluate(`document.querySelector('`+card+` .log-gaps')?.textContent ?? ""`, &note),
				chromedp.Evaluate(`document.querySelector('`+card+` .error')?.textContent ?? ""`, &failed),
				chromedp.Evaluate(`document.querySelector('`+card+` .chart')?.dataset.yticks ?? ""`, &ticks),
				// Coloured (line) pixels in the plot area.
				chromedp.Evaluate(`(() => {
					const card = document.querySelector('`+card+`'), c = card.querySelector("canvas");
					const o = card.querySelector(".u-over");
					if (!c || !o || !c.width || !c.height) return 0;
					const over = o.getBoundingClientRect(), cr = c.getBoundingClientRect();
					const k = c.width / cr.width;
					const box = [(over.left - cr.left) * k, (over.top - cr.top) * k, over.width * k, over.height * k].map(Math.round);
					if (!box.every(Number.isFinite) || box[2] <= 0 || box[3] <= 0) return 0;
					const d = c.getContext("2d").getImageData(...box).data;
					let n = 0;
					for (let i = 0; i < d.length; i += 4)
						if (d[i + 3] > 100 && Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) n++;
					return n; })()`, &coloured),
			)
			screenshot(t, ctx, "scalars-logy-negative-"+x)
			if e := errs(); len(e) > 0 || failed != "" {
				t.Errorf("the page threw %q; the card says %q", e, failed)
			}
			if !strings.Contains(note, "values ≤ 0 not drawn on the log y axis") {
				t.Errorf("log y note = %q; want it to say values ≤ 0 are not drawn", note)
			}
			if ticks == "" {
				t.Errorf("no y axis labels")
			}
			if coloured < 100 {
				t.Errorf("%d coloured pixels in the plot: the positive part is not drawn", coloured)
			}
		})
	}
}
