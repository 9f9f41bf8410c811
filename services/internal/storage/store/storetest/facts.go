package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// testExperimentFacts checks what the experiment lists read from the
// experiment rows the writes maintain: the gallery sorted by each
// experiment's latest data write (not its creation), in pages that add up
// to the whole, and the counts of every listed experiment equal to
// GetExperiment's after scalar, tensor and blob writes.
func testExperimentFacts(t *testing.T, s store.Store) {
	c := ctx(t)
	owner := newUser(t, s, "facts")
	const n = 5
	ids := make([]string, n)
	for i := range ids {
		ids[i] = store.NewExperimentID()
		must(t, "CreateExperiment", s.CreateExperiment(c, store.Experiment{ID: ids[i], Name: fmt.Sprintf("e%d", i), Owner: owner, Visibility: store.VisibilityPublic}))
	}
	// Written in an order unlike creation's: 2, 0, 4; 1 and 3 hold no data.
	must(t, "WriteScalars", s.WriteScalars(c, ids[2], []store.ScalarSeries{scalarSeries("a", "loss", 0, 1, 2, 3), scalarSeries("b", "loss", 0, 1, 2)}))
	must(t, "WriteTensors", s.WriteTensors(c, ids[0], []store.TensorSeries{{Series: store.TimeSeries{Run: "a", Tag: "w", PluginName: "histograms"},
		Points: []store.TensorPoint{{Step: 1, WallTime: 1, Tensor: []byte("1234")}, {Step: 2, WallTime: 2, Tensor: []byte("56")}}}}))
	img := store.TimeSeries{Run: "c", Tag: "img", PluginName: "images"}
	_, _, err := s.GetOrCreateBlobSequence(c, ids[4], img, 7, 1, 1)
	must(t, "GetOrCreateBlobSequence", err)
	must(t, "PutBlob", s.PutBlob(c, ids[4], store.BlobRef{Run: "c", Tag: "img", Step: 7}, store.Blob{ObjectKey: "k7", Size: 9, State: store.BlobStateCurrent}))

	want := []string{ids[4], ids[0], ids[2], ids[3], ids[1]}
	for _, size := range []int{1, 2, n} {
		if got := publicIDs(t, s, "", size); !slices.Equal(got, want) {
			t.Errorf("gallery in pages of %d = %v, want %v (latest data write first, then the newest created)", size, got, want)
		}
	}

	type counts struct{ runs, tags, scalars, tensors, tensorBytes, sequences, blobs, blobBytes int64 }
	countsOf := func(e store.Experiment) counts {
		return counts{e.NumRuns, e.NumTags, e.NumScalars, e.NumTensors, e.TotalTensorBytes, e.NumBlobSequences, e.NumBlobs, e.TotalBlobBytes}
	}
	wantCounts := map[string]counts{
		ids[0]: {runs: 1, tags: 1, tensors: 2, tensorBytes: 6},
		ids[1]: {},
		ids[2]: {runs: 2, tags: 1, scalars: 5},
		ids[3]: {},
		ids[4]: {runs: 1, tags: 1, sequences: 1, blobs: 1, blobBytes: 9},
	}
	check := func(what string, e store.Experiment) {
		t.Helper()
		if got := countsOf(e); got != wantCounts[e.ID] {
			t.Errorf("%s: counts of %s = %+v, want %+v", what, e.ID, got, wantCounts[e.ID])
		}
	}
	for _, eid := range ids {
		e, err := s.GetExperiment(c, eid)
		must(t, "GetExperiment", err)
		check("GetExperiment", e)
	}
	page, err := s.ListPublicExperiments(c, store.PublicQuery{Limit: n})
	must(t, "ListPublicExperiments", err)
	for _, e := range page {
		check("ListPublicExperiments", e)
	}
	var listed []string
	must(t, "ListExperiments", s.ListExperiments(c, store.ExperimentFilter{Owner: owner}, func(e store.Experiment) error {
		check("ListExperiments", e)
		listed = append(listed, e.ID)
		return nil
	}))
	if want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}; !slices.Equal(listed, want) {
		t.Errorf("ListExperiments = %v, want %v (newest created first)", listed, want)
	}
}
