package upload

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	servicepb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard/service"

	"github.com/tbhub/tbhub/uploader/internal/client"
	"github.com/tbhub/tbhub/uploader/internal/logdir"
	"github.com/tbhub/tbhub/uploader/internal/state"
)

// testLimits are the default limits without pacing.
func testLimits() client.Limits {
	l := client.DefaultLimits
	l.MinScalarInterval, l.MinTensorInterval, l.MinBlobInterval = 0, 0, 0
	return l
}

var testRetry = client.Retry{Attempts: 4, Base: time.Millisecond, Max: 10 * time.Millisecond}

// stateChecker is a SaveState that checks, at every save, that the offsets saved
// cover only events the server holds: the state must never claim more than the
// server acknowledged, or a crash right after the save loses data.
type stateChecker struct {
	t     testing.TB
	logs  *memLogdir
	srv   *fakeServer
	mu    sync.Mutex
	saves int
	lost  []string // events a saved state covered that the server did not hold
}

func (c *stateChecker) save(s *state.State) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.saves++
	for run, r := range s.Runs {
		for name, f := range r.Files {
			for _, m := range c.logs.missing(c.srv, run, name, f.Offset) {
				c.lost = append(c.lost, fmt.Sprintf("save %d covers %s", c.saves, m))
			}
		}
	}
	return nil
}

func (c *stateChecker) check() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lost) > 0 {
		c.t.Errorf("the state recorded %d event(s) as sent that the server did not hold, e.g.:\n%s", len(c.lost), strings.Join(c.lost[:min(5, len(c.lost))], "\n"))
	}
}

func newConfig(src logdir.Source, w servicepb.TensorBoardWriterServiceClient, st *state.State, save func(*state.State) error) Config {
	return Config{
		Source: src, Writer: w, ExperimentID: "exp", Limits: testLimits(),
		Plugins: map[string]bool{"scalars": true, "images": true},
		State:   st, SaveState: save, OneShot: true, Retry: testRetry,
	}
}

// image returns n bytes that differ for every (seed, i).
func image(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed*13 + i/251)
	}
	b[0], b[1] = byte(seed), byte(seed>>8)
	return b
}

// TestStateNeverCoversUnacknowledgedBlobs is the kill -9 blob loss of issue 12: many
// images in one file fill the blobs held back for last-write-wins, and a segment
// sealed while they were being submitted recorded the reader's position past the
// ones not yet submitted. Once the segment's own requests were acknowledged the
// state said the rest were sent; tbup killed then never sent them. Here one image
// is held by the server until every other request is done: no save may cover it.
func TestStateNeverCoversUnacknowledgedBlobs(t *testing.T) {
	logs := newMemLogdir()
	w := logs.file(t, "train", "events.out.tfevents.1")
	const steps, size, heldStep = 150, 300_000, 100
	for s := int64(0); s < steps; s++ {
		w.scalar("loss", s, float32(s))
		w.image("samples", s, image(size, int(s)))
	}
	srv, client := newFakeServer(t)
	release := make(chan struct{})
	srv.fault = func(c call) error {
		if c.tag == "samples" && c.step == heldStep && c.method == "WriteBlob" {
			<-release
		}
		return nil
	}
	chk := &stateChecker{t: t, logs: logs, srv: srv}
	st := state.New("fake", "memory")
	u := New(newConfig(logs, client, st, chk.save))
	done := make(chan error, 1)
	go func() { done <- u.Run(context.Background()) }()

	// Everything else reaches the server and is acknowledged.
	waitFor(t, "every other request to be acknowledged", func() bool {
		for s := int64(0); s < steps; s++ {
			if _, ok := srv.blobPoint("train", "samples", s); !ok && s != heldStep {
				return false
			}
		}
		return u.pendingRequests() == 1
	})
	chk.check()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m := logs.missing(srv, "train", "events.out.tfevents.1", 1<<62); len(m) > 0 {
		t.Errorf("after the upload the server lacks %d events: %v", len(m), m[:min(5, len(m))])
	}
	if off, end := st.Runs["train"].Files["events.out.tfevents.1"].Offset, int64(len(logs.files["train/events.out.tfevents.1"].data)); off != end {
		t.Errorf("the state ends at offset %d, the file at %d", off, end)
	}
	chk.check()
}

// waitFor polls cond until it holds; the test's deadline bounds it.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
			if dl, set := d.Deadline(); set && time.Until(dl) < 5*time.Second {
				t.Fatalf("gave up waiting for %s", what)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}
