package inspect

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"

	"github.com/tbhub/tbhub/uploader/eventgen"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
)

func TestFsumIsExactlyRounded(t *testing.T) {
	cases := []struct {
		in   []float64
		want float64
	}{
		{[]float64{1e100, 1, -1e100}, 1},
		{[]float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, 1},
		{[]float64{1, 1e-16, 1e-16}, 1.0000000000000002},
		{nil, 0},
		{[]float64{math.MaxFloat64, math.MaxFloat64}, math.Inf(1)},
	}
	for _, tc := range cases {
		var s fsum
		for _, x := range tc.in {
			s.add(x)
		}
		if got := s.value(); got != tc.want {
			t.Errorf("fsum(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestRewrittenStepsLastWriteWins: a job that restarts from a checkpoint rewrites
// steps; the later value replaces the earlier, across files, and the second (exact)
// pass gives the same answer a map of every step would.
func TestRewrittenStepsLastWriteWins(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, evs ...*tbpb.Event) {
		w, err := eventgen.Create(filepath.Join(dir, "run", name), 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if err := w.WriteEvent(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s := eventgen.SimpleScalar
	write("events.out.tfevents.1", s("loss", 0, 1, 10), s("loss", 1, 1, 20), s("loss", 2, 1, 30), s("acc", 5, 1, 1))
	write("events.out.tfevents.2", s("loss", 1, 2, 200), s("loss", 2, 2, float32(math.Inf(1))), s("loss", 3, 2, 4), s("acc", 6, 1, 2))
	rep, err := Inspect(context.Background(), logdir.Local(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	loss := rep.Runs["run"]["loss"]
	if loss.Points != 4 || loss.MinStep != 0 || loss.MaxStep != 3 || loss.Sum != 214 || loss.PosInf != 1 || loss.Last != 4 {
		t.Errorf("loss = %+v; want 4 points, sum 10+200+4, one +Inf, last 4", loss)
	}
	if acc := rep.Runs["run"]["acc"]; acc.Points != 2 || acc.Sum != 3 {
		t.Errorf("acc = %+v", acc)
	}
	if rep.Totals.Records != 10 || rep.Totals.EventFiles != 2 {
		t.Errorf("totals %+v", rep.Totals)
	}
}
