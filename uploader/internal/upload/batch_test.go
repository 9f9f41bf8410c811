package upload

import (
	"testing"

	"google.golang.org/protobuf/proto"

	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/migrate"
)

// TestBatchKeepsRequestsWithinTheLimit packs points of several runs and tags into
// scalar requests of at most 2 KiB: each request's real encoded size stays within
// the limit, every point arrives once and in order, and metadata goes with the
// first request naming each tag only.
func TestBatchKeepsRequestsWithinTheLimit(t *testing.T) {
	const limit = 2 << 10
	b := batch{experimentID: "experiment-id", maxScalar: limit, maxTens: limit}
	var reqs []*pointRequest
	md := &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "scalars"}}
	series := map[string]*migrate.Series{}
	for step := int64(0); step < 300; step++ {
		for _, run := range []string{"a", "a/long/run/name"} {
			for _, tag := range []string{"loss", "accuracy/top-5"} {
				s := series[run+tag]
				if s == nil {
					s = &migrate.Series{Tag: tag}
					series[run+tag] = s
				}
				pt, cost := scalarPoint(&migrate.Point{Step: step, WallTime: 1.7e9 + float64(step)}, float64(step))
				if !b.scalarFits(run, tag, cost) {
					reqs = append(reqs, b.takeScalars())
				}
				b.addScalar(run, s, md, pt, cost)
			}
		}
	}
	reqs = append(reqs, b.takeScalars())
	if b.takeScalars() != nil {
		t.Error("a request was left after the last was taken")
	}
	next := map[string]int64{}
	withMetadata := map[string]int{}
	points := 0
	for i, r := range reqs {
		req := r.msg.(*servicepb.WriteScalarRequest)
		if n := proto.Size(req); n > limit {
			t.Errorf("request %d is %d bytes, over the %d limit", i, n, limit)
		}
		if r.size < proto.Size(req) {
			t.Errorf("request %d: estimated %d bytes, encodes to %d", i, r.size, proto.Size(req))
		}
		n := 0
		for _, run := range req.GetRuns() {
			for _, tag := range run.GetTags() {
				key := run.GetName() + "/" + tag.GetName()
				if tag.GetMetadata() != nil {
					withMetadata[key]++
				}
				for _, p := range tag.GetPoints() {
					if p.GetStep() != next[key] {
						t.Fatalf("%s: step %d, want %d", key, p.GetStep(), next[key])
					}
					next[key]++
					n++
				}
			}
		}
		if n != r.points {
			t.Errorf("request %d holds %d points, counted %d", i, n, r.points)
		}
		points += n
	}
	if points != 300*4 || len(reqs) < 10 {
		t.Errorf("%d points in %d requests", points, len(reqs))
	}
	for key, n := range next {
		if n != 300 || withMetadata[key] < 1 {
			t.Errorf("%s: %d points, metadata in %d requests", key, n, withMetadata[key])
		}
	}
}
