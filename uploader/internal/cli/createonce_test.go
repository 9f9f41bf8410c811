package cli

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"
	"github.com/tbhub/tbhub/schemas/writehint"

	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

// onceWriter is a write service whose CreateExperiment keeps the server's
// promise (docs/write-service.md, "Creating an experiment"): a request ID
// seen before answers the experiment it created. It records the request ID
// of every call and what the state file held when each call arrived.
type onceWriter struct {
	servicepb.UnimplementedTensorBoardWriterServiceServer
	mu      sync.Mutex
	saved   *string // the state file's CreateRequestID, as last saved
	byID    map[string]string
	created int
	calls   []string // request ID of each call
	onDisk  []string // *saved at each call
}

func (w *onceWriter) CreateExperiment(ctx context.Context, _ *servicepb.CreateExperimentRequest) (*servicepb.CreateExperimentResponse, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := ""
	if v := metadata.ValueFromIncomingContext(ctx, writehint.RequestIDKey); len(v) == 1 {
		id = v[0]
	}
	w.calls, w.onDisk = append(w.calls, id), append(w.onDisk, *w.saved)
	if eid, ok := w.byID[id]; ok && id != "" {
		return &servicepb.CreateExperimentResponse{ExperimentId: eid}, nil
	}
	w.created++
	eid := fmt.Sprintf("exp-%d", w.created)
	w.byID[id] = eid
	return &servicepb.CreateExperimentResponse{ExperimentId: eid}, nil
}

// dropFirstAnswer lets the first call reach the server and loses its
// answer, as a connection cut after the server committed does.
func dropFirstAnswer() grpc.UnaryClientInterceptor {
	var once sync.Once
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		dropped := false
		once.Do(func() { dropped = err == nil })
		if dropped {
			return status.Error(codes.Unavailable, "answer lost")
		}
		return err
	}
}

// A create whose answer is lost is retried with the request ID that was
// saved in the state file before the first attempt, so the server makes
// one experiment and tbup continues it; the ID leaves the state once the
// answer is in. A state left with a pending ID (tbup killed during its
// create) makes the next tbup send that same ID.
func TestCreateExperimentRetryReusesRequestID(t *testing.T) {
	var saved string
	w := &onceWriter{saved: &saved, byID: map[string]string{}}
	lis := serveGRPCListener(t, func(g *grpc.Server) { servicepb.RegisterTensorBoardWriterServiceServer(g, w) })
	conn, err := grpc.NewClient(lis, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(dropFirstAnswer()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	save := func(s *state.State) error { saved = s.CreateRequestID; return nil }
	env := Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	retry := client.Retry{Attempts: 3, Base: time.Millisecond, Max: time.Millisecond}
	writer, experiments := servicepb.NewTensorBoardWriterServiceClient(conn), experimentsv1.NewExperimentServiceClient(conn)

	st := state.New("http://x", "/logdir")
	eid, err := chooseExperiment(t.Context(), env, writer, experiments, st, save, "", "n", "", "", retry)
	if err != nil {
		t.Fatalf("chooseExperiment: %v", err)
	}
	if w.created != 1 || eid != "exp-1" {
		t.Errorf("server created %d experiments, tbup continues %q; want one, exp-1", w.created, eid)
	}
	if len(w.calls) != 2 || w.calls[0] == "" || w.calls[1] != w.calls[0] {
		t.Errorf("request IDs of the attempts: %q; want two equal, non-empty", w.calls)
	}
	if len(w.onDisk) != 2 || w.onDisk[0] != w.calls[0] {
		t.Errorf("state file's request ID when the attempts arrived: %q; want the attempts' %q", w.onDisk, w.calls[0])
	}
	if st.ExperimentID != eid || st.CreateRequestID != "" {
		t.Errorf("state after the answer: experiment %q, pending request %q; want %q and none", st.ExperimentID, st.CreateRequestID, eid)
	}

	// A later tbup finds the request a killed one left pending.
	pending := state.New("http://x", "/other")
	pending.CreateRequestID = w.calls[0]
	again, err := chooseExperiment(t.Context(), env, writer, experiments, pending, save, "", "n", "", "", retry)
	if err != nil {
		t.Fatalf("chooseExperiment with a pending request: %v", err)
	}
	if again != eid || w.created != 1 || w.calls[len(w.calls)-1] != w.calls[0] {
		t.Errorf("pending request: continues %q with ID %q, server created %d; want %q, the same ID, one", again, w.calls[len(w.calls)-1], w.created, eid)
	}
}
