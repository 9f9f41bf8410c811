package serve_test

import (
	"context"
	"fmt"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/services/internal/assembly/serve"
	"github.com/tbhub/tbhub/services/internal/storage/blob"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// benchPointsPerRequest is about what the stock uploader packs into its
// default 128 KiB scalar request.
const (
	benchTags              = 4
	benchPointsPerRequest  = 4000
	benchPointsPerTagBatch = benchPointsPerRequest / benchTags
)

// BenchmarkWriteScalar measures scalar points per second accepted by
// WriteScalar over loopback gRPC from 1 and 8 concurrent clients, each
// uploading its own experiment (new steps every request, 4 tags x 1000
// points per request). It reports the process's CPU use (server and
// clients together, in cores; the Spanner emulator is another process and
// not counted), points per CPU-second (steadier than points/s on a shared
// machine) and its peak RSS.
func BenchmarkWriteScalar(b *testing.B) {
	for _, clients := range []int{1, 8} {
		b.Run(fmt.Sprintf("embedded/clients=%d", clients), func(b *testing.B) {
			st, blobs := embedded(b)
			benchWriteScalar(b, st, blobs, clients)
		})
	}
	for _, clients := range []int{1, 8} {
		b.Run(fmt.Sprintf("spanner-emulator/clients=%d", clients), func(b *testing.B) {
			st, blobs := onSpanner(b)
			benchWriteScalar(b, st, blobs, clients)
		})
	}
}

func benchWriteScalar(b *testing.B, st store.Store, blobs blob.Store, clients int) {
	h := newHarness(b, st, blobs, nil)
	type client struct {
		ctx context.Context
		req *servicepb.WriteScalarRequest
	}
	cs := make([]client, clients)
	for i := range cs {
		token, err := serve.IssueUserToken(b.Context(), st, h.srv.Authenticator(), fmt.Sprintf("user%d", i), "bench")
		if err != nil {
			b.Fatal(err)
		}
		ctx := as(context.Background(), bearer(token))
		ce, err := h.Writer.CreateExperiment(ctx, &servicepb.CreateExperimentRequest{Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		run := &servicepb.WriteScalarRequest_Run{Name: "train"}
		for t := range benchTags {
			tag := &servicepb.WriteScalarRequest_Tag{Name: fmt.Sprintf("metric/%d", t), Metadata: inprocess.ScalarMetadata()}
			for k := range benchPointsPerTagBatch {
				tag.Points = append(tag.Points, &servicepb.ScalarPoint{WallTime: timestamppb.Now(), Value: float64(k) * 0.001})
			}
			run.Tags = append(run.Tags, tag)
		}
		cs[i] = client{ctx: ctx, req: &servicepb.WriteScalarRequest{ExperimentId: ce.GetExperimentId(), Runs: []*servicepb.WriteScalarRequest_Run{run}}}
	}

	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := (b.N + clients - 1) / clients
	errs := make(chan error, clients)
	for i := range cs {
		wg.Add(1)
		go func(c client) {
			defer wg.Done()
			for n := range per {
				// New steps each request: the points are new, not rewrites.
				for _, tag := range c.req.Runs[0].Tags {
					for k, p := range tag.Points {
						p.Step = int64(n*benchPointsPerTagBatch + k)
					}
				}
				if _, err := h.Writer.WriteScalar(c.ctx, c.req); err != nil {
					errs <- err
					return
				}
			}
		}(cs[i])
	}
	wg.Wait()
	b.StopTimer()
	elapsed := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	points := float64(per * clients * benchPointsPerRequest)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(points/elapsed.Seconds(), "points/s")
	b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "cpu-cores")
	b.ReportMetric(points/cpu.Seconds(), "points/cpu-s")
	b.ReportMetric(float64(after.Maxrss)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-inuse-MiB")
	b.ReportMetric(0, "ns/op") // requests differ in cost by client count; points/s is the figure
}
