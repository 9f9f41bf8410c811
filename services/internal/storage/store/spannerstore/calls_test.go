package spannerstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cloud.google.com/go/spanner"
	"cloud.google.com/go/spanner/apiv1/spannerpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
	"github.com/tbhub/tbhub/services/internal/storage/store/spannerstore"
	"github.com/tbhub/tbhub/services/internal/testenv/spanneremu"
)

// callCounter counts the Spanner data RPCs (reads, queries, transaction
// begins and commits) a client makes; session management is left out.
type callCounter struct {
	mu    sync.Mutex
	calls map[string]int
	sql   []string // the statements of the queries
}

// sqlStream records the statement of each query sent on it.
type sqlStream struct {
	grpc.ClientStream
	c *callCounter
}

func (s sqlStream) SendMsg(m any) error {
	if req, ok := m.(*spannerpb.ExecuteSqlRequest); ok {
		s.c.mu.Lock()
		s.c.sql = append(s.c.sql, req.GetSql())
		s.c.mu.Unlock()
	}
	return s.ClientStream.SendMsg(m)
}

// statements returns the statements of the queries sent since the last
// call.
func (c *callCounter) statements() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.sql
	c.sql = nil
	return out
}

func (c *callCounter) count(method string) {
	name := method[strings.LastIndex(method, "/")+1:]
	if !strings.HasPrefix(method, "/google.spanner.v1.Spanner/") || strings.Contains(name, "Session") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[name]++
}

// take returns the calls counted since the last take, and their total.
func (c *callCounter) take() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, total := c.calls, 0
	for _, n := range calls {
		total += n
	}
	c.calls = map[string]int{}
	return calls, total
}

func (c *callCounter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(c.calls)) {
		parts = append(parts, fmt.Sprintf("%s=%d", m, c.calls[m]))
	}
	return strings.Join(parts, " ")
}

// countedStore returns a store on a fresh emulator database, one call at a
// time as spanneremu's Store, whose client counts its RPCs in the returned
// counter; and an experiment in it.
func countedStore(tb testing.TB) (*spannerstore.Store, *callCounter, string) {
	s, c, _, eid := countingStore(tb)
	return s, c, eid
}

// countingStore is countedStore whose client also counts what its commits
// write.
func countingStore(tb testing.TB) (*spannerstore.Store, *callCounter, *commitCounter, string) {
	tb.Helper()
	db := spanneremu.NewDatabase(tb)
	c := &callCounter{calls: map[string]int{}}
	commits := newCommitCounter(tb, db.Client)
	client, err := spanner.NewClient(context.Background(), db.Name,
		option.WithGRPCDialOption(grpc.WithChainUnaryInterceptor(
			func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				c.count(method)
				if commit, ok := req.(*spannerpb.CommitRequest); ok {
					commits.count(commit)
				}
				return invoker(ctx, method, req, reply, cc, opts...)
			})),
		option.WithGRPCDialOption(grpc.WithChainStreamInterceptor(
			func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				c.count(method)
				cs, err := streamer(ctx, desc, cc, method, opts...)
				if err != nil {
					return nil, err
				}
				return sqlStream{cs, c}, nil
			})))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(client.Close)
	s := spannerstore.New(client, spannerstore.Options{SessionClients: []*spanner.Client{}})
	return s, c, commits, newExperiment(tb, s)
}

// runNames are the names of n runs, sorted.
func runNames(n int) []string {
	runs := make([]string, n)
	for i := range runs {
		runs[i] = fmt.Sprintf("run%03d", i)
	}
	return runs
}

// writeRuns writes, for each run, scalar series of the tags with points at
// steps 0..points(run)-1.
func writeRuns(tb testing.TB, s *spannerstore.Store, eid string, runs, tags []string, points func(run int) int64) {
	tb.Helper()
	var batch []store.ScalarSeries
	var inBatch int64
	flush := func() {
		if err := s.WriteScalars(context.Background(), eid, batch); err != nil {
			tb.Fatal(err)
		}
		batch, inBatch = nil, 0
	}
	for i, run := range runs {
		for _, tag := range tags {
			ps := make([]store.ScalarPoint, points(i))
			for st := range ps {
				ps[st] = store.ScalarPoint{Step: int64(st), WallTime: 1.7e9 + float64(st), Value: float64(i) + 1/float64(st+1)}
			}
			batch = append(batch, store.ScalarSeries{Series: store.TimeSeries{Run: run, Tag: tag, PluginName: "scalars"}, Points: ps})
			if inBatch += int64(len(ps)); inBatch >= 20_000 {
				flush()
			}
		}
	}
	if len(batch) > 0 {
		flush()
	}
}

// A card of R runs (and the HParams page's one point of every series) costs
// a number of Spanner calls that does not grow with R, and returns what
// downsample.Select picks from each series.
func TestReadCallsIndependentOfSeries(t *testing.T) {
	s, calls, eid := countedStore(t)
	ctx := t.Context()
	tags := []string{"acc", "loss"}
	// Every third run is shorter than the 10 points asked for, so a read
	// mixes sampled series with series read whole.
	length := func(run int) int64 { return []int64{40, 7, 25}[run%3] }
	runs := runNames(100)
	writeRuns(t, s, eid, runs, tags, length)
	// Other plugins' series and metadata are not what a scalars card reads.
	if err := s.WriteTensors(ctx, eid, []store.TensorSeries{{
		Series: store.TimeSeries{Run: runs[0], Tag: "hist", PluginName: "histograms", SummaryMetadata: make([]byte, 60_000)},
		Points: []store.TensorPoint{{Step: 1, Tensor: []byte{1}}},
	}}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		runs    []string
		tags    []string
		k       int64
		window  func(q *store.Query)
		maxCall int
	}{
		{"card of 1 run", runs[:1], []string{"loss"}, 10, nil, 4},
		{"card of 10 runs", runs[:10], []string{"loss"}, 10, nil, 4},
		{"card of 100 runs", runs, []string{"loss"}, 10, nil, 4},
		{"hparams, 100 runs x 2 metrics", runs, tags, 1, nil, 4},
		{"every series, all points", nil, nil, store.AllPoints, nil, 4},
		{"steps from 3", runs, tags, 10, func(q *store.Query) { q.MinStep = ptr(int64(3)) }, 4},
		{"steps 2 to 30", runs, tags, 10, func(q *store.Query) { q.MinStep, q.MaxStep = ptr(int64(2)), ptr(int64(30)) }, 4},
		{"steps up to 20", runs, tags, 5, func(q *store.Query) { q.MaxStep = ptr(int64(20)) }, 4},
		{"wall time up to step 15", runs, tags, 5, func(q *store.Query) { q.MaxWallTime = ptr(1.7e9 + 15) }, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.take()
			var got []store.SeriesRef
			q := store.Query{Filter: store.Filter{Runs: tc.runs, Tags: tc.tags, Plugins: []string{"scalars"}}, MaxPoints: tc.k}
			if tc.window != nil {
				tc.window(&q)
			}
			err := s.ReadScalars(ctx, eid, q, func(ts *store.TimeSeries, ps []store.ScalarPoint) error {
				got = append(got, store.SeriesRef{Run: ts.Run, Tag: ts.Tag})
				run := slices.Index(runs, ts.Run)
				var inWindow []int64
				for st := range length(run) {
					if q.InWindow(st, 1.7e9+float64(st)) {
						inWindow = append(inWindow, st)
					}
				}
				want := downsample.Select(inWindow, int(min(tc.k, int64(len(inWindow)))))
				steps := make([]int64, len(ps))
				for i, p := range ps {
					steps[i] = p.Step
					if p.Value != float64(run)+1/float64(p.Step+1) {
						t.Errorf("%s/%s step %d: value %v", ts.Run, ts.Tag, p.Step, p.Value)
					}
				}
				if !slices.Equal(steps, want) {
					t.Errorf("%s/%s: steps %v, want %v", ts.Run, ts.Tag, steps, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			wantRuns := tc.runs
			if wantRuns == nil {
				wantRuns = runs
			}
			wantTags := tc.tags
			if wantTags == nil {
				wantTags = tags
			}
			if len(got) != len(wantRuns)*len(wantTags) {
				t.Errorf("visited %d series, want %d", len(got), len(wantRuns)*len(wantTags))
			}
			byCall := calls.String()
			_, n := calls.take()
			t.Logf("%d series: %d Spanner calls (%s)", len(got), n, byCall)
			if n > tc.maxCall {
				t.Errorf("read of %d series made %d Spanner calls (%s), want at most %d", len(got), n, byCall, tc.maxCall)
			}
		})
	}
}

// BenchmarkReadScalarsCard reads a scalars card of 100 runs as one
// scalars_multirun request does: 1,000 samples of each run's series of
// 2,500 points. It reports the Spanner calls per read and the median read
// time. "rows" reads the same number of points, steps 0-999 of each
// series, with no sampling: one read of 100,000 rows, what streaming the
// answer alone costs.
func BenchmarkReadScalarsCard(b *testing.B) {
	s, calls, eid := countedStore(b)
	runs := runNames(100)
	writeRuns(b, s, eid, runs, []string{"loss"}, func(int) int64 { return 2500 })
	f := store.Filter{Runs: runs, Tags: []string{"loss"}, Plugins: []string{"scalars"}}
	for _, bc := range []struct {
		name string
		q    store.Query
	}{
		{"sampled", store.Query{Filter: f, MaxPoints: 1000}},
		{"rows", store.Query{Filter: f, MinStep: ptr(int64(0)), MaxStep: ptr(int64(999)), MaxPoints: store.AllPoints}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			calls.take()
			var took []time.Duration
			cpu := processCPU()
			for b.Loop() {
				start := time.Now()
				got := 0
				err := s.ReadScalars(b.Context(), eid, bc.q, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
					got += len(ps)
					return nil
				})
				if err != nil || got != 100*1000 {
					b.Fatalf("read %d points, err %v; want 100,000", got, err)
				}
				took = append(took, time.Since(start))
			}
			reads := len(took)
			// The client's CPU per read (the emulator is another process):
			// decoding and ranking the points.
			b.ReportMetric(float64((processCPU()-cpu).Microseconds())/1000/float64(reads), "client-cpu-ms")
			slices.Sort(took)
			b.ReportMetric(float64(took[reads/2].Microseconds())/1000, "p50-ms")
			byCall := calls.String()
			_, n := calls.take()
			b.ReportMetric(float64(n)/float64(reads), "calls/op")
			b.Logf("calls over %d reads: %s", reads, byCall)
		})
	}
}

func ptr[T any](v T) *T { return &v }

// processCPU is the CPU time this process has used (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Listing reads are one call when one read suffices (single-use), and the
// reads that check the experiment first begin their transaction with that
// check; a missing experiment still answers store.ErrNotFound.
func TestListingCalls(t *testing.T) {
	s, calls, eid := countedStore(t)
	ctx := t.Context()
	runs := runNames(20)
	writeRuns(t, s, eid, runs, []string{"loss"}, func(int) int64 { return 3 })
	for _, tc := range []struct {
		name    string
		call    func(eid string) error
		maxCall int
	}{
		{"GetExperiment", func(eid string) error { _, err := s.GetExperiment(ctx, eid); return err }, 1},
		{"ListSeries", func(eid string) error {
			_, err := s.ListSeries(ctx, eid, store.DataClassScalar, store.Filter{Plugins: []string{"scalars"}})
			return err
		}, 1},
		{"ListRuns", func(eid string) error { _, err := s.ListRuns(ctx, eid); return err }, 2},
		{"ListPlugins", func(eid string) error { _, err := s.ListPlugins(ctx, eid); return err }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.take()
			if err := tc.call(eid); err != nil {
				t.Fatal(err)
			}
			byCall := calls.String()
			if _, n := calls.take(); n > tc.maxCall {
				t.Errorf("%d Spanner calls (%s), want at most %d", n, byCall, tc.maxCall)
			}
			if err := tc.call(store.NewExperimentID()); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("missing experiment: err %v, want ErrNotFound", err)
			}
		})
	}
}

// A sampled tensor read fills the chosen points' bytes in batches of
// bounded size as the visitor takes them, not all before the first call:
// a visitor that stops the read early saves the later batches.
func TestSampledTensorsFilledInBatches(t *testing.T) {
	s, calls, eid := countedStore(t)
	ctx := t.Context()
	runs := runNames(20)
	for _, run := range runs {
		pts := make([]store.TensorPoint, 12)
		for i := range pts {
			pts[i] = store.TensorPoint{Step: int64(i), WallTime: 1, Tensor: make([]byte, 100_000)}
		}
		if err := s.WriteTensors(ctx, eid, []store.TensorSeries{{Series: store.TimeSeries{Run: run, Tag: "t", PluginName: "p"}, Points: pts}}); err != nil {
			t.Fatal(err)
		}
	}
	// 20 series × 10 chosen points × 100 kB: 20 MB of tensors.
	q := store.Query{MaxPoints: 10}
	read := func(stop bool) (int, int) {
		calls.take()
		visits := 0
		errStop := errors.New("stop")
		err := s.ReadTensors(ctx, eid, q, func(ts *store.TimeSeries, ps []store.TensorPoint) error {
			visits++
			if len(ps) != 10 {
				t.Errorf("%s: %d points, want 10", ts.Run, len(ps))
			}
			for _, p := range ps {
				if len(p.Tensor) != 100_000 {
					t.Errorf("%s step %d: tensor of %d bytes, want 100,000", ts.Run, p.Step, len(p.Tensor))
				}
			}
			if stop {
				return errStop
			}
			return nil
		})
		if stop != errors.Is(err, errStop) || (!stop && err != nil) {
			t.Fatalf("stop %v: err %v", stop, err)
		}
		byCall := calls.String()
		_, n := calls.take()
		t.Logf("stop %v: %d visits, %d calls (%s)", stop, visits, n, byCall)
		return visits, n
	}
	visits, all := read(false)
	if visits != len(runs) || all > 6 {
		t.Errorf("full read: %d visits, %d calls; want %d visits, at most 6 calls", visits, all, len(runs))
	}
	if _, stopped := read(true); stopped >= all {
		t.Errorf("a read stopped at its first series made %d calls, the full read %d: the tensors were all read before the visitor saw any", stopped, all)
	}
}

// Reads of long series come from the sample levels of their chunks, and
// still cost a number of calls that does not grow with the runs: a card of
// 100 runs, the HParams page's last values, step and wall-time windows
// (whose latest point may lie before the chunk the window ends in: a
// second read of the window).
func TestChunkReadCalls(t *testing.T) {
	s, calls, eid := countedStore(t)
	ctx := t.Context()
	runs := runNames(100)
	const n = 5_000
	writeRuns(t, s, eid, runs, []string{"acc", "loss"}, func(int) int64 { return n })
	steps := make([]int64, n)
	for i := range steps {
		steps[i] = int64(i)
	}
	for _, tc := range []struct {
		name   string
		tags   []string
		k      int64
		window func(q *store.Query)
	}{
		{"card of 100 runs", []string{"loss"}, 100, nil},
		{"hparams, 100 runs x 2 metrics", []string{"acc", "loss"}, 1, nil},
		{"steps from 1,000", []string{"loss"}, 100, func(q *store.Query) { q.MinStep = ptr(int64(1000)) }},
		{"steps up to 3,333, latest", []string{"loss"}, 1, func(q *store.Query) { q.MaxStep = ptr(int64(3333)) }},
		{"wall time up to step 2,100", []string{"loss"}, 50, func(q *store.Query) { q.MaxWallTime = ptr(1.7e9 + 2100) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.take()
			q := store.Query{Filter: store.Filter{Runs: runs, Tags: tc.tags}, MaxPoints: tc.k}
			if tc.window != nil {
				tc.window(&q)
			}
			var inWindow []int64
			for _, st := range steps {
				if q.InWindow(st, 1.7e9+float64(st)) {
					inWindow = append(inWindow, st)
				}
			}
			want := downsample.Select(inWindow, int(tc.k))
			visits := 0
			err := s.ReadScalars(ctx, eid, q, func(ts *store.TimeSeries, ps []store.ScalarPoint) error {
				visits++
				got := make([]int64, len(ps))
				for i, p := range ps {
					got[i] = p.Step
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s/%s: steps %v, want %v", ts.Run, ts.Tag, got, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if visits != len(runs)*len(tc.tags) {
				t.Errorf("visited %d series, want %d", visits, len(runs)*len(tc.tags))
			}
			byCall := calls.String()
			_, total := calls.take()
			t.Logf("%d series: %d Spanner calls (%s)", visits, total, byCall)
			if total > 4 {
				t.Errorf("read of %d series made %d Spanner calls (%s), want at most 4", visits, total, byCall)
			}
		})
	}
}

// A read of a step window in the middle of a long series finds the chunks
// its ends fall in by key ranges sized from the series' mean step
// density: no query scans the series' chunk keys below the window (which
// cost a 10M-point series' zoomed read 150 ms on the emulator), in every
// read mode, while steps are dense.
func TestStepWindowReadsScanNoChunks(t *testing.T) {
	s, calls, eid := countedStore(t)
	ctx := t.Context()
	writeRuns(t, s, eid, []string{"r"}, []string{"loss"}, func(int) int64 { return 60_000 })
	lo, hi := ptr(int64(30_000)), ptr(int64(36_000))
	for name, q := range map[string]store.Query{
		"bucketed":       {MinStep: lo, MaxStep: hi, Buckets: 10},
		"bucketed exact": {MinStep: lo, MaxStep: hi, Buckets: 1000},
		"sampled":        {MinStep: lo, MaxStep: hi, MaxPoints: 100},
		"window":         {MinStep: lo, MaxStep: hi, MaxPoints: 1000},
		"all":            {MinStep: lo, MaxStep: hi, MaxPoints: store.AllPoints},
		"latest":         {MaxStep: hi, MaxPoints: 1},
		"from lo":        {MinStep: lo, MaxPoints: store.AllPoints},
	} {
		calls.statements()
		got := 0
		err := s.ReadScalars(ctx, eid, q, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
			got += len(ps)
			return nil
		})
		if err != nil || got == 0 {
			t.Fatalf("%s: read %d points, err %v", name, got, err)
		}
		for _, sql := range calls.statements() {
			if strings.Contains(sql, "ScalarChunks") {
				t.Errorf("%s: a query reads the chunks: %s", name, sql)
			}
		}
	}
}

// A read naming its runs and tags (a card, the HParams page) selects its
// series by key, with no query (on the emulator the query cost more than
// the chunk read it precedes): only the named scalar series of the
// named plugins, and store.ErrNotFound once the experiment is deleted.
func TestNamedSeriesReadByKey(t *testing.T) {
	s, calls, eid := countedStore(t)
	ctx := t.Context()
	runs := runNames(10)
	writeRuns(t, s, eid, runs, []string{"loss"}, func(int) int64 { return 30 })
	// Series the filter names but must not select: another class, another
	// plugin.
	err := s.WriteTensors(ctx, eid, []store.TensorSeries{{
		Series: store.TimeSeries{Run: runs[0], Tag: "img", PluginName: "scalars", DataClass: store.DataClassTensor},
		Points: []store.TensorPoint{{Step: 1, WallTime: 1.7e9, DType: 1, Tensor: []byte{1}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteScalars(ctx, eid, []store.ScalarSeries{{
		Series: store.TimeSeries{Run: runs[1], Tag: "x", PluginName: "other"},
		Points: []store.ScalarPoint{{Step: 1, WallTime: 1.7e9, Value: 1}},
	}}); err != nil {
		t.Fatal(err)
	}
	q := store.Query{Filter: store.Filter{Runs: append(runs, "no-such-run", runs[0]), Tags: []string{"loss", "img", "x", "none"}, Plugins: []string{"scalars"}}, MaxPoints: 10}
	calls.take()
	var got []string
	err = s.ReadScalars(ctx, eid, q, func(ts *store.TimeSeries, ps []store.ScalarPoint) error {
		got = append(got, ts.Run+"/"+ts.Tag)
		if len(ps) != 10 {
			t.Errorf("%s/%s: %d points, want 10", ts.Run, ts.Tag, len(ps))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range runs {
		want = append(want, r+"/loss")
	}
	if !slices.Equal(got, want) {
		t.Errorf("read series %v, want %v", got, want)
	}
	if byCall, _ := calls.take(); byCall["ExecuteStreamingSql"] != 0 {
		t.Errorf("calls %v: a query selected the series", byCall)
	}
	if err := s.DeleteExperiment(ctx, eid); err != nil {
		t.Fatal(err)
	}
	err = s.ReadScalars(ctx, eid, q, func(*store.TimeSeries, []store.ScalarPoint) error { return nil })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("read of a deleted experiment: %v, want store.ErrNotFound", err)
	}
	err = s.ReadScalars(ctx, store.NewExperimentID(), q, func(*store.TimeSeries, []store.ScalarPoint) error { return nil })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("read of a missing experiment: %v, want store.ErrNotFound", err)
	}
}
