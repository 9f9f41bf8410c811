package storetest

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/blob/blobtest"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

func testTensors(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	ts := store.TimeSeries{Run: "r", Tag: "hist", PluginName: "histograms", SummaryMetadata: []byte{1, 2}}
	var points []store.TensorPoint
	for i := range int64(300) {
		points = append(points, store.TensorPoint{
			Step: i * 10, WallTime: float64(i), DType: int32(i % 20), Shape: []int64{i % 4, 3},
			Tensor: bytes.Repeat([]byte{byte(i)}, int(i%50)),
		})
	}
	points[3].Shape = nil // a scalar tensor
	must(t, "WriteTensors", s.WriteTensors(c, eid, []store.TensorSeries{{Series: ts, Points: points}}))

	sameTensor := func(a, b store.TensorPoint) bool {
		return a.Step == b.Step && a.WallTime == b.WallTime && a.DType == b.DType &&
			slices.Equal(a.Shape, b.Shape) && len(a.Shape) == len(b.Shape) && bytes.Equal(a.Tensor, b.Tensor)
	}
	for _, k := range []int64{0, 1, 10, 299, store.AllPoints} {
		var got []series[store.TensorPoint]
		q := store.Query{MaxPoints: k, MinStep: ptr(int64(5))}
		must(t, "ReadTensors", s.ReadTensors(c, eid, q, collect(t, tensorStep, &got)))
		if len(got) != 1 || got[0].PluginName != "histograms" || !bytes.Equal(got[0].SummaryMetadata, []byte{1, 2}) || got[0].DataClass != store.DataClassTensor {
			t.Fatalf("k=%d: series %+v, want the one histogram series", k, got)
		}
		var inWindow []store.ScalarPoint
		for _, p := range points {
			inWindow = append(inWindow, store.ScalarPoint{Step: p.Step, WallTime: p.WallTime})
		}
		asScalars := mapSlice(got[0].Points, func(p *store.TensorPoint) store.ScalarPoint {
			return store.ScalarPoint{Step: p.Step, WallTime: p.WallTime}
		})
		checkDownsample(t, fmt.Sprintf("tensors, k=%d", k), inWindow, store.Query{MaxPoints: k, MinStep: q.MinStep}, asScalars)
		for _, p := range got[0].Points {
			if !sameTensor(p, points[p.Step/10]) {
				t.Errorf("k=%d: tensor %+v, want %+v", k, p, points[p.Step/10])
			}
		}
	}
	var total int64
	for _, p := range points {
		total += int64(len(p.Tensor))
	}
	e, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if e.NumTensors != 300 || e.TotalTensorBytes != total || e.NumScalars != 0 {
		t.Errorf("counts = %+v, want 300 tensors of %d bytes", e, total)
	}
	list, err := s.ListSeries(c, eid, store.DataClassTensor, store.Filter{})
	must(t, "ListSeries", err)
	if len(list) != 1 || list[0].MaxStep != 2990 || list[0].MaxWallTime != 299 || list[0].PointCount != 300 {
		t.Errorf("ListSeries = %+v", list)
	}
}

// PutBlobIf writes only over the row its caller read (none, or one at a
// generation), records the generation, and never turns a current row back
// into an unfinished one; a refused write changes nothing.
func testBlobRowConditions(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	ts := store.TimeSeries{Run: "r", Tag: "images", PluginName: "images", SummaryMetadata: []byte("m")}
	_, _, err := s.GetOrCreateBlobSequence(c, eid, ts, 1, 1, 1)
	must(t, "GetOrCreateBlobSequence", err)
	ref := store.BlobRef{Run: "r", Tag: "images", Step: 1}
	none := store.BlobMatch{}
	at := func(gen int64) store.BlobMatch { return store.BlobMatch{Exists: true, Generation: gen} }
	claim := store.Blob{ObjectKey: "k", State: store.BlobStateUnfinalized}
	must(t, "PutBlobIf a claim over no row", s.PutBlobIf(c, eid, ref, claim, none))
	wantErr(t, "PutBlobIf over no row, with a row", s.PutBlobIf(c, eid, ref, claim, none), store.ErrConflict)
	partial := store.Blob{ObjectKey: "k", Size: 5, CRC32C: 9, State: store.BlobStateUnfinalized, Generation: 11}
	must(t, "PutBlobIf partial over the claim", s.PutBlobIf(c, eid, ref, partial, at(0)))
	wantErr(t, "PutBlobIf over a replaced generation", s.PutBlobIf(c, eid, ref, partial, at(0)), store.ErrConflict)
	got, err := s.GetBlob(c, eid, ref)
	must(t, "GetBlob", err)
	if got != partial {
		t.Errorf("GetBlob = %+v, want %+v", got, partial)
	}
	done := store.Blob{ObjectKey: "k", Size: 8, CRC32C: 7, State: store.BlobStateCurrent, Generation: 12}
	must(t, "PutBlobIf current", s.PutBlobIf(c, eid, ref, done, at(11)))
	// A late writer that read the current row's generation still may not
	// turn it back into an unfinished one.
	late := store.Blob{ObjectKey: "k", Size: 5, CRC32C: 9, State: store.BlobStateUnfinalized, Generation: 12}
	wantErr(t, "PutBlobIf unfinished over current", s.PutBlobIf(c, eid, ref, late, at(12)), store.ErrConflict)
	got, err = s.GetBlob(c, eid, ref)
	must(t, "GetBlob", err)
	if got != done {
		t.Errorf("GetBlob after refused writes = %+v, want %+v", got, done)
	}
	e, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if e.NumBlobs != 1 || e.TotalBlobBytes != 8 {
		t.Errorf("counts = %d blobs, %d bytes; want 1 of 8 bytes", e.NumBlobs, e.TotalBlobBytes)
	}
}

func testBlobSequences(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	ts := store.TimeSeries{Run: "r", Tag: "images", PluginName: "images", SummaryMetadata: []byte("m")}
	seq, replaced, err := s.GetOrCreateBlobSequence(c, eid, ts, 7, 100.5, 3)
	must(t, "GetOrCreateBlobSequence", err)
	if seq.Step != 7 || seq.WallTime != 100.5 || seq.Length != 3 || len(seq.Blobs) != 0 || replaced != nil {
		t.Errorf("new sequence = %+v", seq)
	}
	blobRef := func(step, idx int64) store.BlobRef {
		return store.BlobRef{Run: "r", Tag: "images", Step: step, Index: idx}
	}
	b0 := store.Blob{ObjectKey: "experiments/" + eid + "/a", Size: 10, CRC32C: 0xdeadbeef, State: store.BlobStateUnfinalized}
	must(t, "PutBlob unfinalized", s.PutBlob(c, eid, blobRef(7, 0), b0))
	b0.Size, b0.CRC32C, b0.State = 20, 0xffffffff, store.BlobStateCurrent
	must(t, "PutBlob current", s.PutBlob(c, eid, blobRef(7, 0), b0))
	must(t, "PutBlob current again", s.PutBlob(c, eid, blobRef(7, 0), b0))
	b2 := store.Blob{ObjectKey: "experiments/" + eid + "/c", Size: 5, CRC32C: 1, State: store.BlobStateCurrent}
	must(t, "PutBlob index 2", s.PutBlob(c, eid, blobRef(7, 2), b2))
	wantErr(t, "index past the length", s.PutBlob(c, eid, blobRef(7, 3), b2), store.ErrInvalidArgument)
	wantErr(t, "negative index", s.PutBlob(c, eid, blobRef(7, -1), b2), store.ErrInvalidArgument)
	wantErr(t, "unknown step", s.PutBlob(c, eid, blobRef(8, 0), b2), store.ErrNotFound)
	wantErr(t, "unknown tag", s.PutBlob(c, eid, store.BlobRef{Run: "r", Tag: "nope"}, b2), store.ErrNotFound)

	// The same write again (a retry, a resumed upload) returns the existing point unchanged.
	again, replaced, err := s.GetOrCreateBlobSequence(c, eid, ts, 7, 100.5, 3)
	must(t, "GetOrCreateBlobSequence again", err)
	b0.Index, b2.Index = 0, 2
	if again.WallTime != 100.5 || again.Length != 3 || !slices.Equal(again.Blobs, []store.Blob{b0, b2}) || replaced != nil {
		t.Errorf("existing sequence = %+v, replaced %v; want the first one with blobs 0 and 2", again, replaced)
	}
	got, err := s.GetBlob(c, eid, blobRef(7, 0))
	must(t, "GetBlob", err)
	if got != b0 {
		t.Errorf("GetBlob = %+v, want %+v", got, b0)
	}
	_, err = s.GetBlob(c, eid, blobRef(7, 1))
	wantErr(t, "GetBlob of an empty slot", err, store.ErrNotFound)

	for step := int64(0); step < 40; step++ {
		if step == 7 {
			continue
		}
		_, _, err := s.GetOrCreateBlobSequence(c, eid, ts, step, float64(step), step%5)
		must(t, "GetOrCreateBlobSequence", err)
	}
	list, err := s.ListSeries(c, eid, store.DataClassBlobSequence, store.Filter{})
	must(t, "ListSeries", err)
	if len(list) != 1 || list[0].PointCount != 40 || list[0].MaxLength != 4 || list[0].MaxStep != 39 || list[0].MaxWallTime != 100.5 {
		t.Errorf("ListSeries = %+v, want 40 points, max length 4, max step 39, max wall time 100.5", list)
	}
	for _, k := range []int64{3, store.AllPoints} {
		var read []series[store.BlobSequencePoint]
		must(t, "ReadBlobSequences", s.ReadBlobSequences(c, eid, store.Query{MaxPoints: k}, collect(t, blobSeqStep, &read)))
		if len(read) != 1 {
			t.Fatalf("k=%d: %d series, want 1", k, len(read))
		}
		steps := stepsOf(read[0].Points, blobSeqStep)
		asScalars := mapSlice(read[0].Points, func(p *store.BlobSequencePoint) store.ScalarPoint { return store.ScalarPoint{Step: p.Step} })
		checkDownsample(t, fmt.Sprintf("blob sequences, k=%d", k), mapSlice(stepRange(0, 40), func(s *int64) store.ScalarPoint {
			return store.ScalarPoint{Step: *s}
		}), store.Query{MaxPoints: k}, asScalars)
		for _, p := range read[0].Points {
			wantLen, wantBlobs := p.Step%5, []store.Blob(nil)
			if p.Step == 7 {
				wantLen, wantBlobs = 3, []store.Blob{b0, b2}
			}
			if p.Length != wantLen || !slices.Equal(p.Blobs, wantBlobs) {
				t.Errorf("k=%d: step %d = %+v, want length %d, blobs %v (steps %v)", k, p.Step, p, wantLen, wantBlobs, steps)
			}
		}
	}
	e, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if e.NumBlobSequences != 40 || e.NumBlobs != 2 || e.TotalBlobBytes != 25 {
		t.Errorf("counts = %+v, want 40 sequences, 2 blobs, 25 bytes", e)
	}
	// Back to unfinalized (a restarted upload): no longer counted.
	b2.State = store.BlobStateUnfinalized
	must(t, "PutBlob unfinalized again", s.PutBlob(c, eid, blobRef(7, 2), b2))
	e, err = s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if e.NumBlobs != 1 || e.TotalBlobBytes != 20 {
		t.Errorf("counts = %+v, want 1 blob, 20 bytes", e)
	}
	wantErr(t, "PutBlob without state", s.PutBlob(c, eid, blobRef(7, 1), store.Blob{ObjectKey: "k"}), store.ErrInvalidArgument)

	// A rewrite of the step (another wall time or length: a job restarted from a
	// checkpoint) wins: the point takes the new shape and loses its blobs, which are
	// returned so that their objects can be deleted.
	b2.Index = 2
	rewritten, replaced, err := s.GetOrCreateBlobSequence(c, eid, ts, 7, 200.25, 2)
	must(t, "GetOrCreateBlobSequence rewrite", err)
	if rewritten.WallTime != 200.25 || rewritten.Length != 2 || len(rewritten.Blobs) != 0 || !slices.Equal(replaced, []store.Blob{b0, b2}) {
		t.Errorf("rewritten sequence = %+v, replaced %v; want wall time 200.25, length 2, no blobs, blobs 0 and 2 replaced", rewritten, replaced)
	}
	wantErr(t, "PutBlob past the new length", s.PutBlob(c, eid, blobRef(7, 2), b0), store.ErrInvalidArgument)
	_, err = s.GetBlob(c, eid, blobRef(7, 0))
	wantErr(t, "GetBlob of a replaced blob", err, store.ErrNotFound)
	b1 := store.Blob{ObjectKey: "experiments/" + eid + "/new", Size: 7, State: store.BlobStateCurrent}
	must(t, "PutBlob after the rewrite", s.PutBlob(c, eid, blobRef(7, 1), b1))
	e, err = s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if e.NumBlobSequences != 40 || e.NumBlobs != 1 || e.TotalBlobBytes != 7 {
		t.Errorf("counts after the rewrite = %+v, want 40 sequences, 1 blob of 7 bytes", e)
	}
	list, err = s.ListSeries(c, eid, store.DataClassBlobSequence, store.Filter{})
	must(t, "ListSeries", err)
	if len(list) != 1 || list[0].PointCount != 40 || list[0].MaxWallTime != 200.25 {
		t.Errorf("ListSeries after the rewrite = %+v, want 40 points, max wall time 200.25", list)
	}
	var read []series[store.BlobSequencePoint]
	must(t, "ReadBlobSequences", s.ReadBlobSequences(c, eid, store.Query{Filter: store.Filter{Runs: []string{"r"}}, MinStep: &rewritten.Step, MaxStep: &rewritten.Step, MaxPoints: store.AllPoints}, collect(t, blobSeqStep, &read)))
	b1.Index = 1
	if len(read) != 1 || len(read[0].Points) != 1 || read[0].Points[0].WallTime != 200.25 || !slices.Equal(read[0].Points[0].Blobs, []store.Blob{b1}) {
		t.Errorf("read after the rewrite = %+v", read)
	}
}

// testCountRuns: the runs an experiment has, and which of some names it
// has not, whether the runs came from PutRuns or from points.
func testCountRuns(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	total, missing, err := s.CountRuns(c, eid, []string{"b", "a"})
	must(t, "CountRuns", err)
	if total != 0 || !slices.Equal(missing, []string{"a", "b"}) {
		t.Errorf("CountRuns of an empty experiment = %d, %q; want 0, [a b]", total, missing)
	}
	must(t, "PutRuns", s.PutRuns(c, eid, []store.Run{{Name: "a"}, {Name: "b"}}))
	must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{scalarSeries("c", "loss", 0, 0, 1)}))
	total, missing, err = s.CountRuns(c, eid, []string{"d", "c", "x/y", "d", "a"})
	must(t, "CountRuns", err)
	if total != 3 || !slices.Equal(missing, []string{"d", "x/y"}) {
		t.Errorf("CountRuns = %d, %q; want 3, [d x/y]", total, missing)
	}
	total, missing, err = s.CountRuns(c, eid, []string{"c", "a"})
	must(t, "CountRuns", err)
	if total != 0 || len(missing) != 0 {
		t.Errorf("CountRuns of existing runs = %d, %q; want 0 (not counted), []", total, missing)
	}
	total, missing, err = s.CountRuns(c, eid, nil)
	must(t, "CountRuns", err)
	if total != 3 || len(missing) != 0 {
		t.Errorf("CountRuns with no names = %d, %q; want 3 (counted), []", total, missing)
	}
	must(t, "PutRuns", s.PutRuns(c, eid, []store.Run{{Name: "d"}}))
	total, missing, err = s.CountRuns(c, eid, []string{"e"})
	must(t, "CountRuns", err)
	if total != 4 || !slices.Equal(missing, []string{"e"}) {
		t.Errorf("CountRuns = %d, %q; want 4, [e]", total, missing)
	}
	_, _, err = s.CountRuns(c, store.NewExperimentID(), []string{"a"})
	wantErr(t, "CountRuns of an unknown experiment", err, store.ErrNotFound)
	must(t, "DeleteExperiment", s.DeleteExperiment(c, eid))
	_, _, err = s.CountRuns(c, eid, []string{"a"})
	wantErr(t, "CountRuns of a deleted experiment", err, store.ErrNotFound)
}

// testListRunsAfter: pages of runs in bytewise name order, with their
// start times, that together are ListRuns.
func testListRunsAfter(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	names := []string{"b", "a", "a/1", "Z", "é", "a0", "eval"}
	var runs []store.Run
	for i, n := range names {
		runs = append(runs, store.Run{Name: n, StartTime: float64(100 + i)})
	}
	must(t, "PutRuns", s.PutRuns(c, eid, runs))
	all, err := s.ListRuns(c, eid)
	must(t, "ListRuns", err)
	var paged []store.Run
	after := ""
	for {
		page, err := s.ListRunsAfter(c, eid, after, 3)
		must(t, "ListRunsAfter", err)
		if len(page) > 3 {
			t.Fatalf("a page of %d runs, limit 3", len(page))
		}
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		after = page[len(page)-1].Name
	}
	if !slices.Equal(paged, all) || len(all) != len(names) {
		t.Errorf("pages = %v, want ListRuns = %v", paged, all)
	}
	var got []string
	for _, r := range paged {
		got = append(got, r.Name)
	}
	if want := slices.Sorted(slices.Values(names)); !slices.Equal(got, want) {
		t.Errorf("runs in order %q, want bytewise %q", got, want)
	}
	page, err := s.ListRunsAfter(c, eid, "a0", 2)
	must(t, "ListRunsAfter", err)
	if len(page) != 2 || page[0].Name != "b" || page[0].StartTime != 100 || page[1].Name != "eval" {
		t.Errorf("ListRunsAfter(a0, 2) = %v, want b (100), eval", page)
	}
	_, err = s.ListRunsAfter(c, eid, "", 0)
	wantErr(t, "ListRunsAfter with limit 0", err, store.ErrInvalidArgument)
	_, err = s.ListRunsAfter(c, store.NewExperimentID(), "", 1)
	wantErr(t, "ListRunsAfter of an unknown experiment", err, store.ErrNotFound)
}

// testPutRuns: a run with no data is listed and counted (TensorBoard lists
// a run whose event files hold only the file_version event, or nothing);
// the start time an uploader read from a run's first event is the run's,
// whatever the points written before or after it say.
func testPutRuns(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	// Points first, with an earlier wall time than the first event (the
	// step was rewritten, or the clock moved): the declared time wins.
	early := scalarSeries("train", "loss", 0, 0, 1)
	early.Points[0].WallTime = 10
	must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{early}))
	must(t, "PutRuns", s.PutRuns(c, eid, []store.Run{
		{Name: "train", StartTime: 500.5},
		{Name: "empty"},                            // no event yet: created, no start time
		{Name: "hparams/1", StartTime: 1e9 + 0.25}, // the file_version event only
	}))
	// Points after the declaration, earlier still: the declared time stays.
	later := scalarSeries("train", "acc", 0, 2)
	later.Points[0].WallTime = 5
	must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{later}))
	// A declaration without a time (a re-sent empty run) keeps the known one.
	must(t, "PutRuns again", s.PutRuns(c, eid, []store.Run{{Name: "hparams/1"}, {Name: "empty"}}))

	want := []store.Run{{Name: "empty"}, {Name: "hparams/1", StartTime: 1e9 + 0.25}, {Name: "train", StartTime: 500.5}}
	runs, err := s.ListRuns(c, eid)
	must(t, "ListRuns", err)
	if !slices.Equal(runs, want) {
		t.Errorf("ListRuns = %v, want %v", runs, want)
	}
	e, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if e.NumRuns != 3 || e.NumTags != 2 || e.NumScalars != 3 {
		t.Errorf("counts = %d runs, %d tags, %d scalars; want 3, 2, 3", e.NumRuns, e.NumTags, e.NumScalars)
	}
	// A later declaration (the uploader read the first event again, say
	// after the first file was replaced) replaces the earlier one, and a
	// run that has data gets points as usual.
	must(t, "PutRuns update", s.PutRuns(c, eid, []store.Run{{Name: "empty", StartTime: 42}, {Name: "train", StartTime: 600}}))
	must(t, "WriteScalars to the empty run", s.WriteScalars(c, eid, []store.ScalarSeries{scalarSeries("empty", "x", 0, 0)}))
	runs, err = s.ListRuns(c, eid)
	must(t, "ListRuns", err)
	if want := []store.Run{{Name: "empty", StartTime: 42}, {Name: "hparams/1", StartTime: 1e9 + 0.25}, {Name: "train", StartTime: 600}}; !slices.Equal(runs, want) {
		t.Errorf("ListRuns after the second declaration = %v, want %v", runs, want)
	}

	wantErr(t, "PutRuns with an empty name", s.PutRuns(c, eid, []store.Run{{Name: "ok"}, {Name: ""}}), store.ErrInvalidArgument)
	wantErr(t, "PutRuns with an infinite time", s.PutRuns(c, eid, []store.Run{{Name: "ok", StartTime: math.Inf(1)}}), store.ErrInvalidArgument)
	runs, err = s.ListRuns(c, eid)
	must(t, "ListRuns", err)
	if len(runs) != 3 {
		t.Errorf("a rejected PutRuns created runs: %v", runs)
	}
	wantErr(t, "PutRuns to a missing experiment", s.PutRuns(c, store.NewExperimentID(), []store.Run{{Name: "x"}}), store.ErrNotFound)
	must(t, "DeleteExperiment", s.DeleteExperiment(c, eid))
	wantErr(t, "PutRuns to a deleted experiment", s.PutRuns(c, eid, []store.Run{{Name: "x"}}), store.ErrNotFound)
}

func testRunsPluginsCounts(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	a := scalarSeries("train", "loss", 0, 1, 2, 3)
	a.Points[1].WallTime = 50 // not the first step, but the earliest time
	b := scalarSeries("eval", "loss", 0, 4)
	b.Points[0].WallTime = math.NaN() // unknown time: ignored for start times
	must(t, "WriteScalars", s.WriteScalars(c, eid, []store.ScalarSeries{a, b}))
	must(t, "WriteTensors", s.WriteTensors(c, eid, []store.TensorSeries{{Series: store.TimeSeries{Run: "train", Tag: "w", PluginName: "histograms"}, Points: []store.TensorPoint{{Step: 1, WallTime: 2000, Tensor: []byte("12345")}}}}))
	_, _, err := s.GetOrCreateBlobSequence(c, eid, store.TimeSeries{Run: "img", Tag: "x", PluginName: "images"}, 0, 3000, 2)
	must(t, "GetOrCreateBlobSequence", err)

	runs, err := s.ListRuns(c, eid)
	must(t, "ListRuns", err)
	want := []store.Run{{Name: "eval", StartTime: 0}, {Name: "img", StartTime: 3000}, {Name: "train", StartTime: 50}}
	if !slices.Equal(runs, want) {
		t.Errorf("ListRuns = %v, want %v", runs, want)
	}
	plugins, err := s.ListPlugins(c, eid)
	must(t, "ListPlugins", err)
	if want := []string{"histograms", "images", "scalars"}; !slices.Equal(plugins, want) {
		t.Errorf("ListPlugins = %v, want %v", plugins, want)
	}
	e, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if e.NumRuns != 3 || e.NumTags != 3 || e.NumScalars != 4 || e.NumTensors != 1 || e.TotalTensorBytes != 5 ||
		e.NumBlobSequences != 1 || e.NumBlobs != 0 || e.TotalBlobBytes != 0 {
		t.Errorf("counts = %+v, want 3 runs, 3 tags (loss, w, x), 4 scalars, 1 tensor of 5 bytes, 1 sequence", e)
	}
	if e.UpdateTime.Before(e.CreateTime) {
		t.Errorf("update time %v before create time %v", e.UpdateTime, e.CreateTime)
	}
}

// bigBatchPoints is more scalar points than one Spanner commit may carry
// (80,000 mutations, several per point), so backends must split.
const bigBatchPoints = 60_000

func testBigBatches(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	var batch []store.ScalarSeries
	for i := range 4 {
		batch = append(batch, scalarSeries("r", fmt.Sprintf("tag%d", i), float64(i), stepRange(0, bigBatchPoints/4)...))
	}
	must(t, "WriteScalars big batch", s.WriteScalars(c, eid, batch))
	// 48 MiB of tensors in one call: more bytes than a Spanner commit.
	const tensorSize, tensorCount = 512 << 10, 96
	ts := store.TensorSeries{Series: store.TimeSeries{Run: "r", Tag: "big"}}
	for i := range int64(tensorCount) {
		ts.Points = append(ts.Points, store.TensorPoint{Step: i, DType: 1, Tensor: bytes.Repeat([]byte{byte(i)}, tensorSize)})
	}
	must(t, "WriteTensors big batch", s.WriteTensors(c, eid, []store.TensorSeries{ts}))

	got := readScalars(t, s, eid, all(store.Filter{}))
	if len(got) != 4 {
		t.Fatalf("%d series, want 4", len(got))
	}
	for i, g := range got {
		if !sameScalars(g.Points, batch[i].Points) {
			t.Errorf("%v: %d points read back differ from the %d written", refOf(&g.TimeSeries), len(g.Points), len(batch[i].Points))
		}
	}
	var tensors int
	err := s.ReadTensors(c, eid, all(store.Filter{}), func(_ *store.TimeSeries, ps []store.TensorPoint) error {
		for _, p := range ps {
			if len(p.Tensor) != tensorSize || p.Tensor[0] != byte(p.Step) {
				return fmt.Errorf("tensor at step %d damaged", p.Step)
			}
		}
		tensors += len(ps)
		return nil
	})
	must(t, "ReadTensors", err)
	e, err := s.GetExperiment(c, eid)
	must(t, "GetExperiment", err)
	if tensors != tensorCount || e.NumScalars != bigBatchPoints || e.TotalTensorBytes != tensorSize*tensorCount {
		t.Errorf("read %d tensors; counts %+v; want %d tensors, %d scalars", tensors, e, tensorCount, bigBatchPoints)
	}
}

func testConcurrentWriters(t *testing.T, s store.Store) {
	c := ctx(t)
	const writers, batches, perBatch = 4, 10, 200
	eids := make([]string, writers)
	for i := range eids {
		eids[i] = newExperiment(t, s)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for b := range int64(batches) {
				batch := []store.ScalarSeries{
					scalarSeries("r", "x", float64(w), stepRange(b*perBatch, (b+1)*perBatch)...),
					scalarSeries(fmt.Sprintf("run%d", w), "y", float64(w), b),
				}
				if err := s.WriteScalars(c, eids[w], batch); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent WriteScalars: %v", err)
	}
	for w, eid := range eids {
		got := readScalars(t, s, eid, all(store.Filter{}))
		want := scalarSeries("r", "x", float64(w), stepRange(0, batches*perBatch)...)
		if len(got) != 2 || !sameScalars(got[0].Points, want.Points) || len(got[1].Points) != batches || got[1].Run != fmt.Sprintf("run%d", w) {
			t.Errorf("experiment %d: got %d series (%v), want r/x with %d points and run%d/y with %d", w, len(got), refs(got), batches*perBatch, w, batches)
		}
		e, err := s.GetExperiment(c, eid)
		must(t, "GetExperiment", err)
		if e.NumScalars != batches*perBatch+batches {
			t.Errorf("experiment %d: NumScalars = %d, want %d", w, e.NumScalars, batches*perBatch+batches)
		}
	}
}

// testReadersDuringWrites reads while a writer appends batches of 100
// points: every read must see whole batches (each write call is atomic at
// this size) and never fewer points than an earlier read.
func testReadersDuringWrites(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	const batches, perBatch = 30, 100
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for b := range int64(batches) {
			if err := s.WriteScalars(c, eid, []store.ScalarSeries{scalarSeries("r", "x", 0, stepRange(b*perBatch, (b+1)*perBatch)...)}); err != nil {
				t.Errorf("WriteScalars: %v", err)
				return
			}
		}
	})
	for range 2 {
		wg.Go(func() {
			seen := 0
			for finished := false; !finished; {
				select {
				case <-done:
					finished = true
				default:
				}
				n := 0
				var last int64 = -1
				err := s.ReadScalars(c, eid, all(store.Filter{}), func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
					for _, p := range ps {
						if p.Step != last+1 {
							return fmt.Errorf("step %d follows %d", p.Step, last)
						}
						last = p.Step
					}
					n += len(ps)
					return nil
				})
				if err != nil {
					t.Errorf("ReadScalars during writes: %v", err)
					return
				}
				if n%perBatch != 0 || n < seen {
					t.Errorf("a read saw %d points (earlier %d): want whole batches of %d, never fewer", n, seen, perBatch)
					return
				}
				seen = n
				k := int64(10)
				var sampled []series[store.ScalarPoint]
				if err := s.ReadScalars(c, eid, store.Query{MaxPoints: k}, collect(t, scalarStep, &sampled)); err != nil {
					t.Errorf("downsampled ReadScalars during writes: %v", err)
					return
				}
				if len(sampled) == 1 && (len(sampled[0].Points) == 0 || int64(len(sampled[0].Points)) > k) {
					t.Errorf("downsampled read during writes returned %d points", len(sampled[0].Points))
				}
			}
		})
	}
	wg.Wait()
	got := readScalars(t, s, eid, all(store.Filter{}))
	if len(got) != 1 || len(got[0].Points) != batches*perBatch {
		t.Errorf("after the writes: %v", refs(got))
	}
}

// testHostileNames: runs and tags with any name (path syntax, escapes,
// spaces, 255 and 1,024 bytes of multi-byte UTF-8, emoji) keep their blob
// rows, and each row keeps the object key it was given; filters find each
// name exactly.
func testHostileNames(t *testing.T, s store.Store) {
	c := ctx(t)
	eid := newExperiment(t, s)
	var names []string
	for _, n := range blobtest.HostileNames() {
		if n != "" {
			names = append(names, n)
		}
	}
	type written struct {
		ref store.BlobRef
		b   store.Blob
	}
	var rows []written
	for i, name := range names {
		for _, rt := range [][2]string{{name, "images"}, {"train", name}} {
			ts := store.TimeSeries{Run: rt[0], Tag: rt[1], PluginName: "images"}
			_, _, err := s.GetOrCreateBlobSequence(c, eid, ts, int64(i), float64(i), 1)
			must(t, fmt.Sprintf("GetOrCreateBlobSequence(%q, %q)", rt[0], rt[1]), err)
			ref := store.BlobRef{Run: rt[0], Tag: rt[1], Step: int64(i)}
			b := store.Blob{ObjectKey: blob.ObjectKey(eid, rt[0], rt[1], int64(i), 0), Size: int64(i), CRC32C: uint32(i), State: store.BlobStateCurrent}
			must(t, fmt.Sprintf("PutBlob(%q, %q)", rt[0], rt[1]), s.PutBlob(c, eid, ref, b))
			rows = append(rows, written{ref, b})
		}
	}
	runs, err := s.ListRuns(c, eid)
	must(t, "ListRuns", err)
	listed := map[string]bool{}
	for _, r := range runs {
		listed[r.Name] = true
	}
	for _, w := range rows {
		if !listed[w.ref.Run] {
			t.Errorf("ListRuns misses run %q", w.ref.Run)
		}
		got, err := s.GetBlob(c, eid, w.ref)
		if err != nil || got != w.b {
			t.Errorf("GetBlob(%q, %q) = %+v, %v; want %+v", w.ref.Run, w.ref.Tag, got, err, w.b)
		}
		var read []series[store.BlobSequencePoint]
		q := all(store.Filter{Runs: []string{w.ref.Run}, Tags: []string{w.ref.Tag}})
		must(t, "ReadBlobSequences", s.ReadBlobSequences(c, eid, q, collect(t, blobSeqStep, &read)))
		if len(read) != 1 || read[0].Run != w.ref.Run || read[0].Tag != w.ref.Tag || len(read[0].Points) != 1 ||
			!slices.Equal(read[0].Points[0].Blobs, []store.Blob{w.b}) {
			t.Errorf("ReadBlobSequences(%q, %q) = %+v, want one point holding %+v", w.ref.Run, w.ref.Tag, read, w.b)
		}
	}
	if len(runs) != len(names)+1 {
		t.Errorf("ListRuns = %d runs, want %d", len(runs), len(names)+1)
	}
	must(t, "DeleteExperiment", s.DeleteExperiment(c, eid))
	var keys []string
	must(t, "ListObjectKeys", s.ListObjectKeys(c, eid, func(k string) error { keys = append(keys, k); return nil }))
	want := mapSlice(rows, func(w *written) string { return w.b.ObjectKey })
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("ListObjectKeys = %d keys, want the %d written", len(keys), len(want))
	}
}
