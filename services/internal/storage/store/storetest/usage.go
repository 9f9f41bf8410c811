package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// The tests in this file check the per-user usage the writes keep
// (UserUsage.Points) and the points quota checked against it inside the
// write (store.WithQuotas).

// testUsageCounts: usage after writes of scalars and tensors; rewrites of
// stored steps do not count twice; deleting an experiment takes its
// points away and leaves the owner's other experiments counted.
func testUsageCounts(t *testing.T, s store.Store) {
	eid, owner := ownedExperiment(t, s)
	other := ownedExperiments(t, s, owner, 1)[0]
	points := func(want int64, when string) {
		t.Helper()
		if u := usageOf(t, s, owner); u != nil && u.Points != want {
			t.Errorf("UserUsage.Points %s = %d, want %d", when, u.Points, want)
		}
	}
	points(0, "before any write")
	must(t, "WriteScalars", s.WriteScalars(ctx(t), eid, []store.ScalarSeries{
		scalarSeries("train", "loss", 0, stepRange(0, 100)...), scalarSeries("eval", "loss", 0, stepRange(0, 10)...)}))
	tensors := store.TensorSeries{Series: store.TimeSeries{Run: "train", Tag: "hist", PluginName: "histograms", DataClass: store.DataClassTensor}}
	for step := range int64(5) {
		tensors.Points = append(tensors.Points, store.TensorPoint{Step: step, WallTime: 1, DType: 1, Tensor: []byte{byte(step)}})
	}
	must(t, "WriteTensors", s.WriteTensors(ctx(t), eid, []store.TensorSeries{tensors}))
	points(115, "after 110 scalars and 5 tensors")
	// The same steps again, some with new values, and 10 new ones.
	must(t, "WriteScalars again", s.WriteScalars(ctx(t), eid, []store.ScalarSeries{
		scalarSeries("train", "loss", 1, stepRange(50, 110)...)}))
	must(t, "WriteTensors again", s.WriteTensors(ctx(t), eid, []store.TensorSeries{tensors}))
	points(125, "after rewrites and 10 new steps")
	must(t, "WriteScalars other", s.WriteScalars(ctx(t), other, []store.ScalarSeries{scalarSeries("r", "t", 0, stepRange(0, 7)...)}))
	points(132, "with a second experiment")
	if u := usageOf(t, s, owner); u != nil && u.Experiments != 2 {
		t.Errorf("UserUsage.Experiments = %d, want 2", u.Experiments)
	}
	must(t, "DeleteExperiment", s.DeleteExperiment(ctx(t), eid))
	points(7, "after deleting the first experiment")
	if u := usageOf(t, s, owner); u != nil && u.Experiments != 1 {
		t.Errorf("UserUsage.Experiments after a delete = %d, want 1", u.Experiments)
	}
	_, err := store.Sweep(ctx(t), s, func(context.Context, string) error { return nil }, 10)
	must(t, "Sweep", err)
	points(7, "after the sweep")
}

// testPointsQuota: a write that would pass the quota is refused whole,
// saying which quota and by how much; rewrites of stored steps pass at
// the quota; a write that fits exactly passes.
func testPointsQuota(t *testing.T, s store.Store) {
	eid, owner := ownedExperiment(t, s)
	c := store.WithQuotas(ctx(t), store.Quotas{Points: 100})
	must(t, "WriteScalars 90", s.WriteScalars(c, eid, []store.ScalarSeries{scalarSeries("train", "loss", 0, stepRange(0, 90)...)}))
	err := s.WriteScalars(c, eid, []store.ScalarSeries{
		scalarSeries("train", "acc", 0, stepRange(0, 5)...), scalarSeries("train", "loss", 0, stepRange(90, 100)...)})
	var q *store.QuotaError
	if !errors.As(err, &q) || !errors.Is(err, store.ErrQuotaExceeded) {
		t.Fatalf("WriteScalars past the quota: got error %v, want a *store.QuotaError", err)
	}
	if want := (store.QuotaError{Quota: store.PointsQuotaName, Limit: 100, Used: 90, Adding: 15}); *q != want {
		t.Errorf("QuotaError = %+v, want %+v", *q, want)
	}
	if got := readScalars(t, s, eid, all(store.Filter{})); len(got) != 1 || len(got[0].Points) != 90 {
		t.Errorf("after the refused write: %d series, want only train/loss with its 90 points", len(got))
	}
	tensors := store.TensorSeries{Series: store.TimeSeries{Run: "train", Tag: "hist", PluginName: "histograms", DataClass: store.DataClassTensor},
		Points: []store.TensorPoint{{Step: 1, DType: 1, Tensor: []byte{1}}, {Step: 2, DType: 1, Tensor: []byte{2}}}}
	must(t, "WriteTensors 2", s.WriteTensors(c, eid, []store.TensorSeries{tensors}))
	for step := range int64(9) {
		tensors.Points = append(tensors.Points, store.TensorPoint{Step: 3 + step, DType: 1})
	}
	if err := s.WriteTensors(c, eid, []store.TensorSeries{tensors}); !errors.As(err, &q) || q.Adding != 9 || q.Used != 92 {
		t.Errorf("WriteTensors of 9 new steps at 92 of 100: got error %v, want a QuotaError adding 9 to 92", err)
	}
	must(t, "WriteScalars of 8 to reach the quota", s.WriteScalars(c, eid, []store.ScalarSeries{scalarSeries("train", "loss", 0, stepRange(90, 98)...)}))
	must(t, "WriteScalars rewriting stored steps at the quota", s.WriteScalars(c, eid, []store.ScalarSeries{scalarSeries("train", "loss", 3, stepRange(0, 98)...)}))
	if u := usageOf(t, s, owner); u != nil && u.Points != 100 {
		t.Errorf("UserUsage.Points = %d, want 100", u.Points)
	}
	// Without a quota in the context nothing is refused.
	must(t, "WriteScalars without a quota", s.WriteScalars(ctx(t), eid, []store.ScalarSeries{scalarSeries("train", "loss", 0, 500)}))
}

// testPointsQuotaRace: two writers of one user, each sending 150,000
// points in requests of 10,000 under a 200,000-point quota, at once, as
// two server instances do. The quota is checked where the points are
// counted, so the stored total never passes it, and each refusal is a
// QuotaError.
func testPointsQuotaRace(t *testing.T, s store.Store) {
	const quota, each, perRequest = 200_000, 150_000, 10_000
	owner := newUser(t, s, "racer-"+store.NewExperimentID())
	eids := ownedExperiments(t, s, owner, 2)
	c := store.WithQuotas(ctx(t), store.Quotas{Points: quota})
	upload := func(eid string) error {
		for lo := int64(0); lo < each; lo += perRequest {
			if err := s.WriteScalars(c, eid, []store.ScalarSeries{scalarSeries("train", "loss", 0, stepRange(lo, lo+perRequest)...)}); err != nil {
				return err
			}
		}
		return nil
	}
	errs := runAll(func() error { return upload(eids[0]) }, func() error { return upload(eids[1]) })
	refused := 0
	for i, err := range errs {
		if err == nil {
			continue
		}
		if !errors.Is(err, store.ErrQuotaExceeded) {
			t.Fatalf("upload %d: %v, want nil or a quota error", i, err)
		}
		refused++
	}
	if refused == 0 {
		t.Errorf("both uploads of %d points passed a quota of %d", each, quota)
	}
	var stored int64
	for _, eid := range eids {
		for _, ss := range readScalars(t, s, eid, all(store.Filter{})) {
			stored += int64(len(ss.Points))
		}
	}
	if stored > quota || stored < quota-perRequest {
		t.Errorf("stored %d points under a quota of %d, want at most the quota and less than one request short", stored, quota)
	}
	if u := usageOf(t, s, owner); u != nil && u.Points != stored {
		t.Errorf("UserUsage.Points = %d, want the %d stored", u.Points, stored)
	}
	t.Logf("stored %d of %d points under a quota of %d", stored, 2*each, quota)
}

// testExperimentsQuota: creates past the experiments quota are refused
// with the numbers, both ways of creating; a delete frees a place; many
// creates at once make exactly the quota's experiments.
func testExperimentsQuota(t *testing.T, s store.Store) {
	owner := newUser(t, s, "creator-"+store.NewExperimentID())
	c := store.WithQuotas(ctx(t), store.Quotas{Experiments: 2})
	create := func() (string, error) {
		eid := store.NewExperimentID()
		return eid, s.CreateExperiment(c, store.Experiment{ID: eid, Owner: owner, Visibility: store.VisibilityPrivate})
	}
	first, err := create()
	must(t, "first CreateExperiment", err)
	_, err = create()
	must(t, "second CreateExperiment", err)
	var q *store.QuotaError
	if _, err := create(); !errors.As(err, &q) || *q != (store.QuotaError{Quota: store.ExperimentsQuotaName, Limit: 2, Used: 2, Adding: 1}) {
		t.Errorf("third CreateExperiment: got error %v, want a QuotaError of experiments per user 2, used 2, adding 1", err)
	}
	now := time.Now()
	_, err = s.CreateExperimentOnce(c, store.Experiment{ID: store.NewExperimentID(), Owner: owner, Visibility: store.VisibilityPrivate},
		store.CreateRequest{ID: "req-1", Now: now, Expire: now.Add(time.Hour)})
	if !errors.Is(err, store.ErrQuotaExceeded) {
		t.Errorf("CreateExperimentOnce past the quota: got error %v, want a quota error", err)
	}
	must(t, "DeleteExperiment", s.DeleteExperiment(ctx(t), first))
	_, err = create()
	must(t, "CreateExperiment after a delete", err)

	racer := newUser(t, s, "racer-"+store.NewExperimentID())
	c = store.WithQuotas(ctx(t), store.Quotas{Experiments: 5})
	created := admittedAtOnce(t, "CreateExperiment", 12, func(int) error {
		return s.CreateExperiment(c, store.Experiment{ID: store.NewExperimentID(), Owner: racer, Visibility: store.VisibilityPrivate})
	})
	if u := usageOf(t, s, racer); created != 5 || (u != nil && u.Experiments != 5) {
		t.Errorf("12 creates at once under a quota of 5 made %d (usage says %+v), want 5", created, u)
	}
}

// testBytesQuota: blob rows count their size toward the byte quota, in
// the usage row the blob writes keep (UserUsage.BlobBytes), unfinished or
// current; a row that would take the user past the quota, counting the
// other stored bytes the caller says it has, is refused with the numbers
// and not written; a rewrite of a step, a swept abandoned blob and a
// deleted experiment give their bytes back.
func testBytesQuota(t *testing.T, s store.Store) {
	eid, owner := ownedExperiment(t, s)
	other := ownedExperiments(t, s, owner, 1)[0]
	c := store.WithQuotas(ctx(t), store.Quotas{Bytes: 1000, OtherBytes: 100})
	img := store.TimeSeries{Run: "r", Tag: "img", PluginName: "images"}
	for _, e := range []string{eid, other} {
		for step := int64(1); step <= 2; step++ {
			if _, _, err := s.GetOrCreateBlobSequence(c, e, img, step, 1, 3); err != nil {
				t.Fatal(err)
			}
		}
	}
	blobBytes := func(want int64, when string) {
		t.Helper()
		if u := usageOf(t, s, owner); u != nil && u.BlobBytes != want {
			t.Errorf("UserUsage.BlobBytes %s = %d, want %d", when, u.BlobBytes, want)
		}
	}
	put := func(e string, step, index, size int64, state store.BlobState) error {
		return s.PutBlob(c, e, store.BlobRef{Run: "r", Tag: "img", Step: step, Index: index},
			store.Blob{ObjectKey: fmt.Sprintf("%s/%d/%d", e, step, index), Size: size, State: state})
	}
	must(t, "unfinished blob of 300", put(eid, 1, 0, 300, store.BlobStateUnfinalized))
	must(t, "the same blob, current, 500", put(eid, 1, 0, 500, store.BlobStateCurrent))
	must(t, "a blob of 300 in the other experiment", put(other, 1, 0, 300, store.BlobStateUnfinalized))
	blobBytes(800, "after 500 current and 300 unfinished bytes")
	var q *store.QuotaError
	err := put(eid, 1, 1, 101, store.BlobStateCurrent)
	if !errors.As(err, &q) || !errors.Is(err, store.ErrQuotaExceeded) ||
		*q != (store.QuotaError{Quota: store.BytesQuotaName, Limit: 1000, Used: 900, Adding: 101}) {
		t.Fatalf("a blob of 101 bytes at 800 + 100 of 1000: got %v, want a QuotaError of 1000 used 900 adding 101", err)
	}
	if p, _, err := s.GetOrCreateBlobSequence(c, eid, img, 1, 1, 3); err != nil || len(p.Blobs) != 1 {
		t.Errorf("the sequence after a refused row: %d blobs (%v), want the first only", len(p.Blobs), err)
	}
	// Growing the other experiment's unfinished row by 100 fits exactly;
	// a row that does not grow passes at the quota.
	must(t, "growing an unfinished blob to the quota", put(other, 1, 0, 400, store.BlobStateUnfinalized))
	must(t, "the same row, current, at the quota", put(other, 1, 0, 400, store.BlobStateCurrent))
	blobBytes(900, "at the quota")
	// A rewrite of the step with another shape drops its blob.
	if _, _, err := s.GetOrCreateBlobSequence(c, eid, img, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	blobBytes(400, "after a rewrite of the step dropped 500 bytes")
	must(t, "a blob of 500 after the rewrite", put(eid, 2, 0, 500, store.BlobStateUnfinalized))
	blobBytes(900, "with a new unfinished blob")
	if _, err := store.SweepAbandonedBlobs(ctx(t), s, func(context.Context, store.AbandonedBlob) error { return nil },
		nil, time.Now().Add(24*time.Hour), 10); err != nil {
		t.Fatal(err)
	}
	blobBytes(400, "after the unfinished blob was swept")
	must(t, "DeleteExperiment", s.DeleteExperiment(ctx(t), other))
	blobBytes(0, "after deleting the experiment holding the rest")
	must(t, "a blob of 900 after the delete", put(eid, 2, 1, 900, store.BlobStateCurrent))
}

// admittedAtOnce runs n calls of fn (given 0..n-1) at once, which a quota
// may refuse, and returns how many passed; an error other than a quota
// error fails the test.
func admittedAtOnce(t *testing.T, what string, n int, fn func(i int) error) int {
	t.Helper()
	fns := make([]func() error, n)
	for i := range fns {
		fns[i] = func() error { return fn(i) }
	}
	passed := 0
	for _, err := range runAll(fns...) {
		switch {
		case err == nil:
			passed++
		case !errors.Is(err, store.ErrQuotaExceeded):
			t.Errorf("%s at once: %v", what, err)
		}
	}
	return passed
}
