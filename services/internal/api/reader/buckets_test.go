package reader_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	datapb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/data"
	"github.com/tbhub/tbhub/schemas/readhint"
	"github.com/tbhub/tbhub/services/internal/api/reader/readertest"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// With the readhint.BucketsKey hint, ReadScalars reads each series
// bucketed over the window of the min- and max-step hints (no tail): one
// spike among 10,000 points is in the answer, which a sample of 100 points
// would all but surely miss. Bad hints are InvalidArgument; without the
// hint the read is TensorBoard's sample.
func TestReadScalarsBuckets(t *testing.T) {
	t.Parallel()
	env, rec, eid, tok := recordedSeries(t, func(i int) float64 {
		if i == 6789 {
			return 1e6 // the spike
		}
		return float64(i % 10)
	})
	read := func(ctx context.Context) (*datapb.ScalarData, store.Query, error) {
		ctx = readertest.WithToken(ctx, tok)
		rec.mu.Lock()
		rec.queries = nil
		rec.mu.Unlock()
		resp, err := env.Client.ReadScalars(ctx, &datapb.ReadScalarsRequest{ExperimentId: eid,
			PluginFilter: &datapb.PluginFilter{PluginName: "scalars"}, Downsample: &datapb.Downsample{NumPoints: 100}})
		if err != nil {
			return nil, store.Query{}, err
		}
		return resp.GetRuns()[0].GetTags()[0].GetData(), rec.queries[0], nil
	}

	lo, hi := int64(6000), int64(6999)
	d, q, err := read(readhint.WithBuckets(context.Background(), 50, &lo, &hi))
	if err != nil {
		t.Fatal(err)
	}
	if q.Buckets != 50 || *q.MinStep != lo || *q.MaxStep != hi {
		t.Errorf("store asked %+v; want 50 buckets over [6000, 6999]", q)
	}
	if !slices.Contains(d.GetValue(), 1e6) || d.GetStep()[0] != lo || d.GetStep()[len(d.GetStep())-1] != hi || len(d.GetStep()) > 5*50 {
		t.Errorf("50 buckets over [6000, 6999]: %d points from %d to %d, spike %v; want at most 250 from 6000 to 6999 with the spike",
			len(d.GetStep()), d.GetStep()[0], d.GetStep()[len(d.GetStep())-1], slices.Contains(d.GetValue(), 1e6))
	}
	// The whole series, 1,000 buckets: the spike again.
	if d, _, err = read(readhint.WithBuckets(context.Background(), 1000, nil, nil)); err != nil || !slices.Contains(d.GetValue(), 1e6) {
		t.Errorf("1,000 buckets of the whole series: spike %v, %v", slices.Contains(d.GetValue(), 1e6), err)
	}

	for _, bad := range [][]string{
		{readhint.BucketsKey, "0"}, {readhint.BucketsKey, "4001"}, {readhint.BucketsKey, "x"},
		{readhint.BucketsKey, "10", readhint.MaxStepKey, "1.5"}, {readhint.BucketsKey, "10", readhint.MinStepKey, "y"},
	} {
		if _, _, err := read(metadata.AppendToOutgoingContext(context.Background(), bad...)); status.Code(err) != codes.InvalidArgument {
			t.Errorf("hints %q: %v, want InvalidArgument", bad, err)
		}
	}

	d, q, err = read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if q.Buckets != 0 || len(d.GetStep()) != 100 {
		t.Errorf("without the hint: %d points, query %+v; want TensorBoard's sample of 100", len(d.GetStep()), q)
	}
}
