package serve_test

import (
	"github.com/tbhub/tbhub/schemas/writehint"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/run/diskspace"
)

// Below its free-space reserve the embedded store refuses the writes
// that add data with UNAVAILABLE "the server's disk is full" (not INTERNAL)
// and /readyz answers 503, while deletes still work; once space is freed
// it is ready and takes writes again, without a restart (issue 20 #8).
// The file system's answer is injected; the monitor reuses it until its
// clock moves on.
func TestDiskSpaceReserve(t *testing.T) {
	t.Parallel()
	st, blobs := embedded(t)
	var free atomic.Uint64
	free.Store(50 << 30)
	var clock atomic.Int64
	later := func() { clock.Add(int64(time.Minute)) }
	mon, err := diskspace.NewMonitor(t.TempDir(), diskspace.DefaultReserve(), diskspace.Options{
		Statfs: func(string) (diskspace.Usage, error) {
			return diskspace.Usage{Free: free.Load(), Total: 100 << 30}, nil
		},
		Now: func() time.Time { return time.Unix(0, clock.Load()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, st, blobs, func(c *serve.Config) { c.DiskSpace = mon })
	ctx, eid := h.AdaExperiment(t, "before")
	waitFor(t, "ready", func() bool { return probe(h.srv.Mux(), "/readyz") == http.StatusOK })

	free.Store(200 << 20) // under the 1 GiB (1%) reserve
	later()
	if code := probe(h.srv.Mux(), "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the disk below its reserve: %d, want 503", code)
	}
	_, err = h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "during"})
	wantDiskFull(t, "CreateExperiment", err)
	// tbup sends a request ID with every create, which the store answers
	// on another path (CreateExperimentOnce); it is refused the same.
	_, err = h.Writer.CreateExperiment(writehint.WithRequestID(ctx, writehint.NewRequestID()), &servicepb.CreateExperimentRequest{Name: "during, retryable"})
	wantDiskFull(t, "CreateExperiment with a request ID", err)
	_, err = h.Writer.WriteScalar(ctx, &servicepb.WriteScalarRequest{ExperimentId: eid, Runs: []*servicepb.WriteScalarRequest_Run{
		{Name: "train", Tags: []*servicepb.WriteScalarRequest_Tag{{Name: "loss", Metadata: inprocess.ScalarMetadata(), Points: []*servicepb.ScalarPoint{{Step: 1, WallTime: timestamppb.Now(), Value: 0.5}}}}},
	}})
	wantDiskFull(t, "WriteScalar", err)
	if _, err := h.Writer.DeleteExperiment(ctx, &servicepb.DeleteExperimentRequest{ExperimentId: eid}); err != nil {
		t.Errorf("DeleteExperiment below the reserve: %v", err)
	}

	free.Store(50 << 30) // space freed
	later()
	if code := probe(h.srv.Mux(), "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz once space is freed: %d, want 200", code)
	}
	if _, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "after"}); err != nil {
		t.Errorf("CreateExperiment once space is freed: %v", err)
	}
}

func wantDiskFull(t *testing.T, call string, err error) {
	t.Helper()
	s := status.Convert(err)
	if s.Code() != codes.Unavailable || !strings.Contains(s.Message(), "the server's disk is full") {
		t.Errorf("%s below the reserve: %v %q, want UNAVAILABLE \"the server's disk is full...\"", call, s.Code(), s.Message())
	}
}
