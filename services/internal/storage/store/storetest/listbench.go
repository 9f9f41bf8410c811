package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// ListBenchOwner is the user FillExperimentLists gives ListBenchOwned
// experiments.
const ListBenchOwner = "u-bench-owner"

// ListBenchOwned is how many experiments ListBenchOwner owns, whatever the
// total.
const ListBenchOwned = 20

// FillExperimentLists writes n experiments for benchmarks of the
// experiment lists: ListBenchOwned of ListBenchOwner's, the others spread
// over one user per 100, half of all public, each with two runs of one
// scalar tag of 3 points (so the counts have series to sum).
func FillExperimentLists(tb testing.TB, s store.Store, n int) {
	tb.Helper()
	c := tb.Context()
	if err := s.CreateUser(c, store.User{ID: ListBenchOwner, Name: "bench-owner"}); err != nil {
		tb.Fatal(err)
	}
	users := map[string]bool{ListBenchOwner: true}
	for i := range n {
		owner := ListBenchOwner
		if i >= ListBenchOwned {
			owner = fmt.Sprintf("u-bench-%d", i/100)
		}
		if !users[owner] {
			if err := s.CreateUser(c, store.User{ID: owner, Name: owner}); err != nil {
				tb.Fatal(err)
			}
			users[owner] = true
		}
		v := store.VisibilityPrivate
		if i%2 == 0 {
			v = store.VisibilityPublic
		}
		eid := store.NewExperimentID()
		if err := s.CreateExperiment(c, store.Experiment{ID: eid, Name: fmt.Sprintf("run %d", i), Owner: owner, Visibility: v}); err != nil {
			tb.Fatal(err)
		}
		err := s.WriteScalars(c, eid, []store.ScalarSeries{scalarSeries("a", "loss", 0, 1, 2, 3), scalarSeries("b", "loss", 0, 1, 2, 3)})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkExperimentLists runs the two list reads on s as filled by
// FillExperimentLists: the gallery's first page (21 experiments, what a
// page of 20 asks for) and ListBenchOwner's list.
func BenchmarkExperimentLists(b *testing.B, s store.Store) {
	c := b.Context()
	b.Run("gallery", func(b *testing.B) {
		for b.Loop() {
			list, err := s.ListPublicExperiments(c, store.PublicQuery{Limit: 21})
			if err != nil || len(list) == 0 || list[0].NumScalars != 6 {
				b.Fatalf("%d experiments (%+v), %v", len(list), list, err)
			}
		}
	})
	b.Run("owner", func(b *testing.B) {
		for b.Loop() {
			n := 0
			err := s.ListExperiments(c, store.ExperimentFilter{Owner: ListBenchOwner}, func(e store.Experiment) error {
				n++
				return nil
			})
			if err != nil || n != ListBenchOwned {
				b.Fatalf("%d experiments, %v", n, err)
			}
		}
	})
}

// SpikeValue is the value of the one spike the bucketed-read benchmarks
// put in their series.
const SpikeValue = 1e9

// ReadBuckets runs one bucketed read q of experiment eid in s and returns
// how many points it answered; tb fails if the read fails, answers
// nothing, or misses the spike (SpikeValue) the series holds.
func ReadBuckets(tb testing.TB, s store.Reader, eid string, q store.Query) int {
	tb.Helper()
	got, sawSpike := 0, false
	err := s.ReadScalars(context.Background(), eid, q, func(_ *store.TimeSeries, ps []store.ScalarPoint) error {
		got += len(ps)
		for _, p := range ps {
			sawSpike = sawSpike || p.Value == SpikeValue
		}
		return nil
	})
	if err != nil || got == 0 || !sawSpike {
		tb.Fatalf("read %d points, spike %v, %v", got, sawSpike, err)
	}
	return got
}
