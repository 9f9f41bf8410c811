package readpath_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/tbhub/tbhub/frontend-api/httpapi"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

type (
	columnsSeries = httpapi.ScalarColumns
	apiFloat      = httpapi.Float
)

// scalars_multirun's "after" (a live page's read of what is new) answers,
// on both stores, with only the points past the page's last step while
// they continue what the page holds, and with the whole series
// downsampled when a step at or before it was rewritten or when more new
// points arrived than the page asked samples for.
func TestScalarsMultirunAfter(t *testing.T) {
	onBackends(t, func(t *testing.T, s *server, _ string) {
		conn, err := grpc.NewClient(s.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+s.token)
		created, err := servicepb.NewTensorBoardWriterServiceClient(conn).CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "live " + t.Name()})
		if err != nil {
			t.Fatal(err)
		}
		eid := created.GetExperimentId()
		series := store.TimeSeries{Run: "a", Tag: "loss", PluginName: "scalars", DataClass: store.DataClassScalar}
		value := func(st int64) float64 { return float64(st) / 8 }
		write := func(steps []int64, wall func(int64) float64) {
			t.Helper()
			var pts []store.ScalarPoint
			for _, st := range steps {
				pts = append(pts, store.ScalarPoint{Step: st, WallTime: wall(st), Value: value(st)})
			}
			if err := s.st.WriteScalars(t.Context(), eid, []store.ScalarSeries{{Series: series, Points: pts}}); err != nil {
				t.Fatal(err)
			}
		}
		span := func(lo, hi int64) []int64 {
			var out []int64
			for st := lo; st < hi; st++ {
				out = append(out, st)
			}
			return out
		}
		first := func(st int64) float64 { return 1e9 + float64(st) }
		write(span(0, 3000), first)

		// read posts the form a live page sends; held is what it holds
		// (nil: a first read).
		read := func(held *columnsSeries) columnsSeries {
			t.Helper()
			form := url.Values{"tag": {"loss"}, "runs": {"a"}, "samples": {"100"}, "format": {"columns"}}
			if held != nil {
				last := len(held.Step) - 1
				after, _ := json.Marshal(map[string]any{"a": map[string]float64{
					"step": float64(held.Step[last]), "wall_time": float64(held.WallTimeBase + held.WallTime[last]), "value": float64(held.Value[last]), "max_wall_time": float64(held.MaxWallTime)}})
				form.Set("after", string(after))
			}
			r := s.do(t, http.MethodPost, "/experiment/"+eid+"/data/plugin/scalars/scalars_multirun", s.token, form)
			var answer map[string]columnsSeries
			if err := json.Unmarshal(r.body, &answer); err != nil || r.status != http.StatusOK {
				t.Fatalf("scalars_multirun %v: %d %v %.200s", form, r.status, err, r.body)
			}
			return answer["a"]
		}
		// merge is the page's: a tail is appended, anything else replaces.
		merge := func(held, got columnsSeries) columnsSeries {
			if got.After == nil {
				return got
			}
			for i := range got.Step {
				held.Step = append(held.Step, got.Step[i])
				held.WallTime = append(held.WallTime, got.WallTimeBase+got.WallTime[i]-held.WallTimeBase)
				held.Value = append(held.Value, got.Value[i])
			}
			held.MaxWallTime = got.MaxWallTime
			return held
		}
		describe := func(c columnsSeries) string {
			after := "none"
			if c.After != nil {
				after = fmt.Sprint(*c.After)
			}
			return fmt.Sprintf("after %s, %d points, steps %v…, max_wall_time %v", after, len(c.Step), c.Step[:min(len(c.Step), 6)], c.MaxWallTime)
		}

		held := read(nil)
		if held.After != nil || len(held.Step) != 100 || held.Step[99] != 2999 || held.MaxWallTime != apiFloat(first(2999)) {
			t.Fatalf("first read: %s; want 100 points sampled up to step 2999, no after", describe(held))
		}

		// Appended points: exactly those come back, past step 2999.
		write(span(3000, 3005), first)
		got := read(&held)
		if got.After == nil || *got.After != 2999 || !slices.Equal(got.Step, span(3000, 3005)) || got.MaxWallTime != apiFloat(first(3004)) {
			t.Fatalf("after 5 appended points: %s; want after 2999, steps 3000–3004", describe(got))
		}
		held = merge(held, got)

		// Nothing new: an empty tail.
		if got := read(&held); got.After == nil || len(got.Step) != 0 {
			t.Errorf("nothing new: %s; want an empty tail", describe(got))
		}

		// A job restarted from step 3000: it rewrote 3000–3004 (new wall
		// times) and went on to 3005. The page's last point changed: the
		// whole series again.
		later := func(st int64) float64 { return 2e9 + float64(st) }
		write(span(3000, 3006), later)
		got = read(&held)
		if got.After != nil || len(got.Step) != 100 || got.Step[99] != 3005 || got.MaxWallTime != apiFloat(later(3005)) {
			t.Fatalf("after a rewrite of steps 3000–3004 and step 3005: %s; want the whole series (100 points to step 3005), no after", describe(got))
		}
		held = merge(held, got)

		// An earlier step rewritten, nothing appended: a wall time later
		// than any the page has seen, so the whole series again.
		write([]int64{10}, func(int64) float64 { return 3e9 })
		if got := read(&held); got.After != nil || got.MaxWallTime != 3e9 {
			t.Errorf("after a rewrite of step 10: %s; want the whole series, no after", describe(got))
		} else {
			held = merge(held, got)
		}

		// The last step rewritten with another value and the same wall time
		// (an event file written again): the whole series.
		value = func(st int64) float64 { return float64(st) / 4 }
		write([]int64{3005}, later)
		if got := read(&held); got.After != nil || len(got.Step) != 100 || got.Value[99] != apiFloat(value(3005)) {
			t.Errorf("after step 3005 rewritten with another value: %s; want the whole series, no after", describe(got))
		} else {
			held = merge(held, got)
		}

		// More new points than samples: downsampled, not a long tail.
		write(span(3006, 3207), later)
		if got := read(&held); got.After != nil || len(got.Step) != 100 || got.Step[99] != 3206 {
			t.Errorf("after 201 appended points: %s; want the whole series sampled to 100 points, no after", describe(got))
		}

		// "after" is tbhub's, for format=columns only.
		r := s.do(t, http.MethodPost, "/experiment/"+eid+"/data/plugin/scalars/scalars_multirun", s.token,
			url.Values{"tag": {"loss"}, "runs": {"a"}, "after": {`{"a":{"step":1}}`}})
		if r.status != http.StatusBadRequest {
			t.Errorf("after without format=columns: %d %.100s, want 400", r.status, r.body)
		}
	})
}
