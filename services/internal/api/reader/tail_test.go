package reader_test

import (
	"context"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/services/internal/api/reader"
	"github.com/tbhub/tbhub/services/internal/api/reader/readertest"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// queryRecorder is a store that records the scalar queries it is asked and
// how many points it hands the visitor.
type queryRecorder struct {
	store.Store
	mu      sync.Mutex
	queries []store.Query
	handed  int
}

func (r *queryRecorder) ReadScalars(ctx context.Context, eid string, q store.Query, fn store.ScalarVisitor) error {
	r.mu.Lock()
	r.queries = append(r.queries, q)
	r.mu.Unlock()
	return r.Store.ReadScalars(ctx, eid, q, func(ts *store.TimeSeries, points []store.ScalarPoint) error {
		r.mu.Lock()
		r.handed += len(points)
		r.mu.Unlock()
		return fn(ts, points)
	})
}

// recordedSeries starts a read service on an embedded store behind a
// queryRecorder, with one private experiment holding series ("a", "x")
// of steps 0 to 9,999 valued value(step), and returns it, the
// experiment and its owner's token.
func recordedSeries(t *testing.T, value func(int) float64) (env *readertest.Env, rec *queryRecorder, eid, tok string) {
	st, bs := readertest.OpenEmbedded(t)
	rec = &queryRecorder{Store: st}
	env = readertest.Start(t, rec, rec, bs, reader.Config{})
	owner, tok := env.User(t, "owner")
	eid = env.Experiment(t, owner, store.VisibilityPrivate)
	var pts []store.ScalarPoint
	for i := range 10_000 {
		pts = append(pts, store.ScalarPoint{Step: int64(i), WallTime: float64(i), Value: value(i)})
	}
	env.Scalars(t, eid, "a", "x", pts)
	return env, rec, eid, tok
}

// A ReadScalars call with the tbhub-min-step header reads each series from
// that step on, in step order, at full resolution: a window the store
// reads by step (MinStep, every point: never the sample index), stopped at
// the first series past num_points. Without the header nothing changes.
func TestReadScalarsTail(t *testing.T) {
	t.Parallel()
	env, rec, eid, tok := recordedSeries(t, func(i int) float64 { return float64(i) })
	read := func(minStep string, k int64) (*datapb.ReadScalarsResponse, error) {
		ctx := readertest.WithToken(context.Background(), tok)
		if minStep != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, reader.MinStepHeader, minStep)
		}
		rec.mu.Lock()
		rec.queries, rec.handed = nil, 0
		rec.mu.Unlock()
		return env.Client.ReadScalars(ctx, &datapb.ReadScalarsRequest{ExperimentId: eid,
			PluginFilter: &datapb.PluginFilter{PluginName: "scalars"}, Downsample: &datapb.Downsample{NumPoints: k}})
	}

	resp, err := read("9995", 10)
	if err != nil {
		t.Fatal(err)
	}
	d := resp.GetRuns()[0].GetTags()[0].GetData()
	if want := []int64{9995, 9996, 9997, 9998, 9999}; len(d.GetStep()) != len(want) || d.GetStep()[0] != 9995 || d.GetStep()[4] != 9999 {
		t.Errorf("tail from 9995: steps %v, want %v", d.GetStep(), want)
	}
	if q := rec.queries[0]; q.MinStep == nil || *q.MinStep != 9995 || q.MaxPoints != store.AllPoints || rec.handed != 5 {
		t.Errorf("tail from 9995: store asked %+v and handed %d points; want MinStep 9995, AllPoints, 5 points", q, rec.handed)
	}

	_, err = read("0", 10)
	if status.Code(err) != codes.OutOfRange {
		t.Errorf("tail of 10,000 points with num_points 10: %v, want OutOfRange", err)
	}
	if rec.handed >= 10_000 {
		t.Errorf("a tail over its limit read the whole series (%d points); want it stopped", rec.handed)
	}

	for _, bad := range []string{"x", "1.5"} {
		if _, err := read(bad, 10); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s %q: %v, want InvalidArgument", reader.MinStepHeader, bad, err)
		}
	}

	resp, err = read("", 10)
	if err != nil {
		t.Fatal(err)
	}
	if d := resp.GetRuns()[0].GetTags()[0].GetData(); len(d.GetStep()) != 10 || d.GetStep()[9] != 9999 || rec.queries[0].MinStep != nil {
		t.Errorf("without the header: %d points to %d, query %+v; want 10 sampled to 9999, no window", len(d.GetStep()), d.GetStep()[len(d.GetStep())-1], rec.queries[0])
	}
}
