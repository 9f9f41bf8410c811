package scalarchunk

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/tbhub/tbhub/services/internal/storage/downsample"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

func summaryPoints(n int) []store.ScalarPoint {
	r := rand.New(rand.NewPCG(1, 2))
	ps := make([]store.ScalarPoint, n)
	step := int64(-50)
	for i := range ps {
		step += 1 + r.Int64N(3)
		ps[i] = store.ScalarPoint{Step: step, WallTime: float64(i), Value: r.NormFloat64()}
	}
	ps[n/3].Value = math.NaN()
	ps[n/2].Value = math.Inf(-1)
	return ps
}

func segmentsOf(ps []store.ScalarPoint, capacity int64) []Segment {
	g := Segmenter{Cap: capacity, Open: true}
	for _, p := range ps {
		g.Add(p)
	}
	g.Flush()
	return g.Out
}

// A row of segments decodes to the segments encoded, floats to the bit;
// a truncated row is ErrCorruptSummary.
func TestSegmentsRoundTrip(t *testing.T) {
	segs := segmentsOf(summaryPoints(5000), 100)
	if len(segs) != 50 {
		t.Fatalf("%d segments of 100 out of 5000 points, want 50", len(segs))
	}
	row := AppendSegments(nil, segs)
	got, err := DecodeSegments(row, nil)
	if err != nil {
		t.Fatal(err)
	}
	bits := func(segs []Segment) [][4]uint64 {
		var out [][4]uint64
		for _, g := range segs {
			for _, p := range g.Points {
				out = append(out, [4]uint64{uint64(g.Count), uint64(p.Step), math.Float64bits(p.WallTime), math.Float64bits(p.Value)})
			}
		}
		return out
	}
	if !reflect.DeepEqual(bits(got), bits(segs)) {
		t.Error("decoded segments differ from those encoded")
	}
	if _, err := DecodeSegments(row[:len(row)-3], nil); !errors.Is(err, ErrCorruptSummary) {
		t.Errorf("truncated row: %v, want ErrCorruptSummary", err)
	}
}

// An answer assembled from segments of one point each is the exact one;
// from coarser segments, it keeps the window's first and last points, its
// extremes and its first NaN.
func TestBucketsFromSegments(t *testing.T) {
	ps := summaryPoints(3000)
	head, mid, tail := ps[:7], ps[7:2990], ps[2990:]
	if got, want := BucketsFromSegments(head, segmentsOf(mid, 1), tail, 40), downsample.BucketPoints(ps, 40); !slices.EqualFunc(got, want, samePoint) {
		t.Errorf("segments of one point: %d points, want the exact %d", len(got), len(want))
	}
	got := BucketsFromSegments(head, segmentsOf(mid, 256), tail, 4)
	lo, hi, nan := ps[0], ps[0], ps[3000/3]
	for _, p := range ps {
		if p.Value < lo.Value {
			lo = p
		}
		if p.Value > hi.Value {
			hi = p
		}
	}
	for _, want := range []store.ScalarPoint{ps[0], ps[len(ps)-1], lo, hi, nan} {
		if !slices.ContainsFunc(got, func(p store.ScalarPoint) bool { return samePoint(p, want) }) {
			t.Errorf("answer misses %+v", want)
		}
	}
}

func samePoint(a, b store.ScalarPoint) bool {
	return a.Step == b.Step && math.Float64bits(a.Value) == math.Float64bits(b.Value) && a.WallTime == b.WallTime
}
