package upload

import (
	"context"
	"sync"
	"testing"

	"google.golang.org/grpc"

	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

// fakeExperiments records PutRuns requests, the last start time per run.
type fakeExperiments struct {
	experimentsv1.ExperimentServiceClient // other methods are not called
	mu                                    sync.Mutex
	starts                                map[string]float64
	calls                                 int
}

func (f *fakeExperiments) PutRuns(_ context.Context, req *experimentsv1.PutRunsRequest, _ ...grpc.CallOption) (*experimentsv1.PutRunsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	for _, r := range req.GetRuns() {
		if _, ok := f.starts[r.GetName()]; !ok || r.GetStartTime() != 0 {
			f.starts[r.GetName()] = r.GetStartTime()
		}
	}
	return &experimentsv1.PutRunsResponse{}, nil
}

// An upload tells the server about every run, with the wall time of its
// first event (the file_version event, earlier than any point) as its start
// time, and about a run whose only file is empty, without one; once that
// file gets its first event, the next pass sends the start time.
func TestUploadDeclaresRunsWithFirstEventTime(t *testing.T) {
	m := newMemLogdir()
	w := m.file(t, "train", "events.out.tfevents.1")
	w.scalar("loss", 7, 1) // point at 1.7e9+7; the file_version event is at 1.7e9
	m.mu.Lock()
	m.runs["starting"] = []string{"events.out.tfevents.2"}
	m.files["starting/events.out.tfevents.2"] = &memFile{}
	m.mu.Unlock()

	_, writer := newFakeServer(t)
	exps := &fakeExperiments{starts: map[string]float64{}}
	cfg := newConfig(m, writer, state.New("", m.String()), nil)
	cfg.Experiments = exps
	u := New(cfg)
	if err := u.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"train": 1.7e9, "starting": 0}
	if len(exps.starts) != 2 || exps.starts["train"] != want["train"] || exps.starts["starting"] != 0 {
		t.Fatalf("PutRuns got %v, want %v", exps.starts, want)
	}

	// The run starts writing: its file gets the file_version event.
	m.mu.Lock()
	delete(m.runs, "starting")
	delete(m.files, "starting/events.out.tfevents.2")
	m.mu.Unlock()
	m.file(t, "starting", "events.out.tfevents.2")
	calls := exps.calls
	if err := u.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if exps.starts["starting"] != 1.7e9 || exps.calls != calls+1 {
		t.Errorf("after the first event: PutRuns got %v in %d more call(s), want starting at 1.7e9 in 1", exps.starts, exps.calls-calls)
	}
	// Nothing new: no more calls.
	calls = exps.calls
	if err := u.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if exps.calls != calls {
		t.Errorf("a pass with nothing new sent %d PutRuns", exps.calls-calls)
	}
}
