package writer_test

import (
	"context"
	"github.com/tbhub/tbhub/services/internal/testenv/inprocess"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/schemas/writehint"
	"github.com/tbhub/tbhub/services/internal/storage/store"
)

// dropFirstAnswer is a client interceptor that lets the first call through
// to the server and then loses its answer, as a connection cut after the
// server committed does: the caller sees Unavailable.
func dropFirstAnswer(dropped *atomic.Bool) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil && dropped.CompareAndSwap(false, true) {
			return status.Error(codes.Unavailable, "answer lost")
		}
		return err
	}
}

// A CreateExperiment whose answer is lost and which is retried with the
// same request ID answers the experiment the first attempt created, and
// the user has one experiment, even at an experiments quota of one. Another
// user's equal request ID creates their own.
func TestCreateExperimentRetriedAfterLostAnswer(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) { c.Limits.MaxExperimentsPerUser = 1 })
	var dropped atomic.Bool
	lossy := servicepb.NewTensorBoardWriterServiceClient(h.Dial(t, grpc.WithUnaryInterceptor(dropFirstAnswer(&dropped))))

	alice := writehint.WithRequestID(inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "alice-sub", "alice@example.com", false))), "req-1")
	req := &servicepb.CreateExperimentRequest{Name: "mnist"}
	_, err := lossy.CreateExperiment(alice, req)
	if status.Code(err) != codes.Unavailable || !dropped.Load() {
		t.Fatalf("first attempt: %v; want its answer dropped", err)
	}
	resp, err := lossy.CreateExperiment(alice, req)
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	eid := resp.GetExperimentId()
	e, err := st.GetExperiment(t.Context(), eid)
	if err != nil {
		t.Fatalf("the answered experiment: %v", err)
	}
	var owned []string
	if err := st.ListExperiments(t.Context(), store.ExperimentFilter{Owner: e.Owner}, func(e store.Experiment) error {
		owned = append(owned, e.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(owned) != 1 || owned[0] != eid {
		t.Errorf("alice owns %q after a lost answer and a retry; want only the answered %q", owned, eid)
	}

	bob := writehint.WithRequestID(inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "bob-sub", "bob@example.com", false))), "req-1")
	bobs, err := h.Writer.CreateExperiment(bob, req)
	if err != nil {
		t.Fatalf("bob's create with alice's request ID: %v", err)
	}
	if bobs.GetExperimentId() == eid {
		t.Errorf("bob's create answered alice's experiment %q", eid)
	}

	bad := writehint.WithRequestID(inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "carol-sub", "carol@example.com", false))), "not an id")
	if _, err := h.Writer.CreateExperiment(bad, req); status.Code(err) != codes.InvalidArgument {
		t.Errorf("create with a request ID holding spaces: %v; want InvalidArgument", err)
	}
}

// A request ID is remembered for --create-request-ttl by the server's
// clock: a retry within it answers the same experiment, a create with the
// ID after it makes a new one.
func TestCreateRequestIDExpires(t *testing.T) {
	t.Parallel()
	st, blobs := inprocess.Embedded(t)
	var skew atomic.Int64
	h := inprocess.Start(t, st, blobs, func(c *inprocess.Config) {
		c.CreateRequestTTL = time.Minute
		c.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	ctx := writehint.WithRequestID(inprocess.As(t.Context(), inprocess.Bearer(h.IDToken(t, "dana-sub", "dana@example.com", false))), "req-ttl")
	req := &servicepb.CreateExperimentRequest{Name: "n"}
	first, err := h.Writer.CreateExperiment(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	skew.Store(int64(30 * time.Second))
	if again, err := h.Writer.CreateExperiment(ctx, req); err != nil || again.GetExperimentId() != first.GetExperimentId() {
		t.Errorf("retry within the TTL: %v, %v; want %q", again.GetExperimentId(), err, first.GetExperimentId())
	}
	skew.Store(int64(2 * time.Minute))
	later, err := h.Writer.CreateExperiment(ctx, req)
	if err != nil || later.GetExperimentId() == first.GetExperimentId() {
		t.Errorf("create after the TTL: %v, %v; want a new experiment", later.GetExperimentId(), err)
	}
}
