package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// The tests in this file make calls contend for one experiment, one series
// and its counters, as several uploaders (or several write instances
// serving one upload) do. On Spanner those calls' transactions conflict,
// abort and are retried; everything a retried transaction does must come
// out as if it ran once.

// usageOf reads the user's usage when the backend keeps identities (every
// backend does); nil otherwise.
func usageOf(t *testing.T, s store.Store, userID string) *store.Usage {
	t.Helper()
	src, ok := s.(interface {
		UserUsage(ctx context.Context, userID string) (store.Usage, error)
	})
	if !ok {
		return nil
	}
	u, err := src.UserUsage(ctx(t), userID)
	must(t, "UserUsage", err)
	return &u
}

// ownedExperiment creates a private experiment owned by a new user and
// returns both IDs.
func ownedExperiment(t *testing.T, s store.Store) (eid, owner string) {
	t.Helper()
	owner = newUser(t, s, "owner-"+store.NewExperimentID())
	eid = store.NewExperimentID()
	must(t, "CreateExperiment", s.CreateExperiment(ctx(t), store.Experiment{
		ID: eid, Name: "exp", Owner: owner, Visibility: store.VisibilityPrivate,
	}))
	return eid, owner
}

// runAll runs fns at once and returns their errors.
func runAll(fns ...func() error) []error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, f := range fns {
		wg.Go(func() { errs[i] = f() })
	}
	wg.Wait()
	return errs
}

// testSameLogdirUploaders: two uploaders send the same logdir into one
// experiment at once, cut into batches of different sizes, one front to
// back and one back to front. Every point is stored once and the counters
// count it once.
func testSameLogdirUploaders(t *testing.T, s store.Store) {
	c := ctx(t)
	eid, owner := ownedExperiment(t, s)
	const steps = 600
	tensor := func(step int64) []byte { return fmt.Appendf(nil, "tensor-%04d", step) }
	upload := func(perBatch int64, backwards bool) func() error {
		return func() error {
			var starts []int64
			for lo := int64(0); lo < steps; lo += perBatch {
				starts = append(starts, lo)
			}
			if backwards {
				for i, j := 0, len(starts)-1; i < j; i, j = i+1, j-1 {
					starts[i], starts[j] = starts[j], starts[i]
				}
			}
			for _, lo := range starts {
				hi := min(lo+perBatch, steps)
				if err := s.WriteScalars(c, eid, []store.ScalarSeries{
					scalarSeries("train", "loss", 0, stepRange(lo, hi)...),
					scalarSeries("eval", "loss", 0, stepRange(lo, hi)...),
				}); err != nil {
					return err
				}
				ts := store.TensorSeries{Series: store.TimeSeries{Run: "train", Tag: "hist", PluginName: "histograms", DataClass: store.DataClassTensor}}
				for step := lo; step < hi; step++ {
					ts.Points = append(ts.Points, store.TensorPoint{Step: step, WallTime: float64(step), DType: 1, Shape: []int64{1}, Tensor: tensor(step)})
				}
				if err := s.WriteTensors(c, eid, []store.TensorSeries{ts}); err != nil {
					return err
				}
			}
			return nil
		}
	}
	for i, err := range runAll(upload(100, false), upload(70, true)) {
		if err != nil {
			t.Errorf("uploader %d: %v", i, err)
		}
	}
	got := readScalars(t, s, eid, all(store.Filter{}))
	want := scalarSeries("", "", 0, stepRange(0, steps)...)
	if len(got) != 2 || !sameScalars(got[0].Points, want.Points) || !sameScalars(got[1].Points, want.Points) {
		t.Errorf("scalars: got %v with %d and %d points, want eval/loss and train/loss with steps 0..%d once each",
			refs(got), len(pointsAt(got, 0)), len(pointsAt(got, 1)), steps-1)
	}
	var tensorSteps []int64
	must(t, "ReadTensors", s.ReadTensors(c, eid, all(store.Filter{}), func(_ *store.TimeSeries, ps []store.TensorPoint) error {
		for _, p := range ps {
			if string(p.Tensor) != string(tensor(p.Step)) {
				return fmt.Errorf("step %d holds %q", p.Step, p.Tensor)
			}
			tensorSteps = append(tensorSteps, p.Step)
		}
		return nil
	}))
	if len(tensorSteps) != steps {
		t.Errorf("read %d tensor points, want %d", len(tensorSteps), steps)
	}
	e, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	tensorBytes := int64(steps * len(tensor(0)))
	if e.NumScalars != 2*steps || e.NumTensors != steps || e.TotalTensorBytes != tensorBytes || e.NumRuns != 2 {
		t.Errorf("counts: %d scalars, %d tensors, %d tensor bytes, %d runs; want %d, %d, %d, 2",
			e.NumScalars, e.NumTensors, e.TotalTensorBytes, e.NumRuns, 2*steps, steps, tensorBytes)
	}
	if u := usageOf(t, s, owner); u != nil && u.Points != 3*steps {
		t.Errorf("UserUsage.Points = %d, want %d", u.Points, 3*steps)
	}
}

func pointsAt[P any](ss []series[P], i int) []P {
	if i < len(ss) {
		return ss[i].Points
	}
	return nil
}

// testSeriesCounters: four writers share one scalar series (each its own
// steps, and all of them the same first 50 steps), one tensor series and
// one blob-sequence series whose blobs they put at once. Every counter on
// the shared series rows comes out exact.
func testSeriesCounters(t *testing.T, s store.Store) {
	c := ctx(t)
	eid, owner := ownedExperiment(t, s)
	const writers, perWriter, shared = 4, 60, 50
	imgSeries := store.TimeSeries{Run: "train", Tag: "images", PluginName: "images"}
	var fns []func() error
	for w := range int64(writers) {
		fns = append(fns, func() error {
			for i := range int64(perWriter) {
				step := shared + i*writers + w // disjoint across writers
				batch := []store.ScalarSeries{scalarSeries("train", "loss", 0, step)}
				if i < shared/10 {
					batch = append(batch, scalarSeries("train", "loss", 0, stepRange(i*10, i*10+10)...))
				}
				if err := s.WriteScalars(c, eid, batch); err != nil {
					return err
				}
				if i%10 != 0 {
					continue
				}
				ts := store.TensorSeries{Series: store.TimeSeries{Run: "train", Tag: "hist", PluginName: "histograms", DataClass: store.DataClassTensor},
					Points: []store.TensorPoint{{Step: step, WallTime: float64(step), DType: 1, Shape: []int64{1}, Tensor: make([]byte, 10+w)}}}
				if err := s.WriteTensors(c, eid, []store.TensorSeries{ts}); err != nil {
					return err
				}
				if _, _, err := s.GetOrCreateBlobSequence(c, eid, imgSeries, step, float64(step), 2); err != nil {
					return err
				}
				for idx := range int64(2) {
					ref := store.BlobRef{Run: imgSeries.Run, Tag: imgSeries.Tag, Step: step, Index: idx}
					b := store.Blob{Index: idx, ObjectKey: fmt.Sprintf("k/%d/%d", step, idx), Size: 100 + w, State: store.BlobStateUnfinalized}
					if err := s.PutBlob(c, eid, ref, b); err != nil {
						return err
					}
					b.State = store.BlobStateCurrent
					if err := s.PutBlob(c, eid, ref, b); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	for i, err := range runAll(fns...) {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	const scalars = shared + writers*perWriter
	const samples = writers * perWriter / 10 // tensor points and blob sequences
	var tensorBytes, blobBytes int64
	for w := range int64(writers) {
		tensorBytes += perWriter / 10 * (10 + w)
		blobBytes += perWriter / 10 * 2 * (100 + w)
	}
	got := readScalars(t, s, eid, all(store.Filter{}))
	if want := scalarSeries("", "", 0, stepRange(0, scalars)...); len(got) != 1 || !sameScalars(got[0].Points, want.Points) {
		t.Errorf("scalars: got %v with %d points, want train/loss with steps 0..%d once each", refs(got), len(pointsAt(got, 0)), scalars-1)
	}
	e, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	wantCounts := fmt.Sprintf("%d scalars, %d tensors (%d bytes), %d blob sequences, %d blobs (%d bytes)",
		scalars, samples, tensorBytes, samples, 2*samples, blobBytes)
	if gotCounts := fmt.Sprintf("%d scalars, %d tensors (%d bytes), %d blob sequences, %d blobs (%d bytes)",
		e.NumScalars, e.NumTensors, e.TotalTensorBytes, e.NumBlobSequences, e.NumBlobs, e.TotalBlobBytes); gotCounts != wantCounts {
		t.Errorf("counts: %s; want %s", gotCounts, wantCounts)
	}
	summaries, err := s.ListSeries(c, eid, store.DataClassBlobSequence, store.Filter{})
	must(t, "ListSeries", err)
	// The last blob sequence is the last writer's at i = perWriter-10.
	if maxStep := int64(shared + (perWriter-10)*writers + writers - 1); len(summaries) != 1 || summaries[0].MaxStep != maxStep {
		t.Errorf("blob series summaries %+v, want one with MaxStep %d", summaries, maxStep)
	}
	if u := usageOf(t, s, owner); u != nil && (u.Points != scalars+samples || u.BlobBytes != blobBytes) {
		t.Errorf("UserUsage = %+v, want %d points and %d blob bytes", *u, scalars+samples, blobBytes)
	}
}

// testAppendsDuringDelete: writers keep appending to one series while the
// experiment is deleted. Each write either lands before the delete or
// fails with store.ErrNotFound, never anything else, and no write succeeds
// after one has seen the deletion. Afterwards nothing of the experiment is
// readable, the owner's usage no longer counts it and the sweeper purges it.
func testAppendsDuringDelete(t *testing.T, s store.Store) {
	c := ctx(t)
	eid, owner := ownedExperiment(t, s)
	const writers, batches, perBatch = 2, 40, 20
	var landed [writers]int
	started := make(chan struct{}, writers*batches)
	var fns []func() error
	for w := range writers {
		fns = append(fns, func() error {
			deleted := false
			for b := range int64(batches) {
				lo := (b*writers + int64(w)) * perBatch
				err := s.WriteScalars(c, eid, []store.ScalarSeries{scalarSeries("train", "loss", 0, stepRange(lo, lo+perBatch)...)})
				switch {
				case err == nil && deleted:
					return fmt.Errorf("batch %d landed after a write saw the experiment deleted", b)
				case err == nil:
					landed[w]++
					started <- struct{}{}
				case errors.Is(err, store.ErrNotFound):
					deleted = true
				default:
					return fmt.Errorf("batch %d: %w", b, err)
				}
			}
			if !deleted {
				return fmt.Errorf("all %d batches landed; the delete never took effect", batches)
			}
			return nil
		})
	}
	fns = append(fns, func() error {
		for range 3 { // let some batches land first
			<-started
		}
		return s.DeleteExperiment(c, eid)
	})
	for i, err := range runAll(fns...) {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	_, err := s.GetExperiment(c, eid)
	wantErr(t, "GetExperiment after delete", err, store.ErrNotFound)
	wantErr(t, "ReadScalars after delete", s.ReadScalars(c, eid, all(store.Filter{}), func(*store.TimeSeries, []store.ScalarPoint) error { return nil }), store.ErrNotFound)
	if u := usageOf(t, s, owner); u != nil && (*u != store.Usage{}) {
		t.Errorf("UserUsage after delete = %+v, want zero", *u)
	}
	ids, err := s.ListDeletedExperiments(c, 100)
	must(t, "ListDeletedExperiments", err)
	if !slices.Contains(ids, eid) {
		t.Fatalf("ListDeletedExperiments = %v, want %s among them", ids, eid)
	}
	must(t, "PurgeExperiment", s.PurgeExperiment(c, eid))
	ids, err = s.ListDeletedExperiments(c, 100)
	must(t, "ListDeletedExperiments", err)
	if slices.Contains(ids, eid) {
		t.Errorf("experiment %s still listed after its purge", eid)
	}
	t.Logf("batches landed before the delete: %v", landed)
}
